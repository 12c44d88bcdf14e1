package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// SchemaFile is the name of a policy's parameter schema in its folder: an
// OpenAPI v3 schema written as a CRD's openAPIV3Schema, with the parameters'
// `default:`s (the only place defaults live). The apiserver's own CRD code
// checks parameters against it, as it checks custom resources: unknown fields
// (pruning), defaults (structural defaulting), then types and values.
const SchemaFile = "parameters.schema.yaml"

// checkParameters returns input.parameters of set: each policy's parameters
// checked against its schema, with the schema's defaults filled in. A policy
// with a schema always gets its (defaulted) parameters; one without takes
// none. Errors name the parameter's path, e.g.
// policies.max-duration.parameters.maxHour: unknown field.
func checkParameters(set PolicySet, known map[string]bool) (map[string]any, error) {
	var errs []string
	for policy := range set.Schemas {
		if !known[policy] {
			errs = append(errs, fmt.Sprintf("%s/%s: a parameter schema for policy %s, which the set does not have", policy, SchemaFile, policy))
		}
	}
	out := map[string]any{}
	for policy := range known {
		path := field.NewPath("policies", policy, "parameters")
		given := set.Parameters.Policies[policy].Parameters
		src, ok := set.Schemas[policy]
		var err error
		switch {
		case ok:
			out[policy], err = applySchema(policy, src, path, given)
		case len(given) > 0:
			err = fmt.Errorf("%s: policy %s takes no parameters (it has no %s/%s)", path, policy, policy, SchemaFile)
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, fmt.Errorf("parameters: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// applySchema checks params against the schema src of policy as the
// apiserver checks a custom resource (prune, default, validate) and returns
// them with its defaults filled in.
func applySchema(policy, src string, path *field.Path, params map[string]any) (map[string]any, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	var internal apiextensions.JSONSchemaProps
	var structural *structuralschema.Structural
	var validator validation.SchemaValidator
	err := yaml.UnmarshalStrict([]byte(src), &v1)
	if err == nil {
		err = apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil)
	}
	if err == nil && internal.Type != "object" {
		err = fmt.Errorf("type must be object, not %q", internal.Type)
	}
	if err == nil {
		structural, err = structuralschema.NewStructural(&internal)
	}
	if err == nil {
		err = structuralschema.ValidateStructural(nil, structural).ToAggregate()
	}
	if err == nil {
		validator, _, err = validation.NewSchemaValidator(&internal)
	}
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", policy, SchemaFile, err)
	}

	obj, err := jsonObject(params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var unknown []string
	for _, u := range pruning.PruneWithOptions(obj, structural, false, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		unknown = append(unknown, path.String()+"."+u+": unknown field")
	}
	if len(unknown) > 0 {
		return nil, errors.New(strings.Join(unknown, "; "))
	}
	defaulting.Default(obj, structural)
	// Defaults come as float64 from the schema's JSON: read them like the
	// parameters, integers as int64, so the validator sees integers.
	if obj, err = jsonObject(obj); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return obj, validation.ValidateCustomResource(path, obj, validator).ToAggregate()
}

// jsonObject is a deep copy of m as the apiserver reads JSON: integers as
// int64, other numbers as float64; an empty object for nil.
func jsonObject(m map[string]any) (map[string]any, error) {
	data, err := json.Marshal(m)
	out := map[string]any{}
	if err == nil {
		err = utiljson.Unmarshal(data, &out)
	}
	if out == nil {
		out = map[string]any{}
	}
	return out, err
}

// DefaultParameter is parameter name of an embedded policy at its schema's
// default, for a process that runs no engine; ok is false when the policy
// or the parameter does not exist or has no default.
func DefaultParameter(policy, name string) (value any, ok bool) {
	set, err := DefaultPolicySet()
	if err != nil {
		return nil, false
	}
	src, found := set.Schemas[policy]
	if !found {
		return nil, false
	}
	params, err := applySchema(policy, src, field.NewPath("policies", policy, "parameters"), nil)
	if err != nil {
		return nil, false
	}
	value, ok = params[name]
	return value, ok
}
