package render

import (
	"context"
	"fmt"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// ValidateAsAPIServer validates a Trainer object (TrainJob, ClusterTrainingRuntime,
// TrainingRuntime) as decoded JSON, the way the apiserver validates a custom
// resource on create (customResourceStrategy.Validate): metadata (name format,
// label and annotation syntax and size), the CRD's OpenAPI schema (types,
// minimum, maxItems, maxLength, enums), list-map keys unique, and the CRD's CEL
// rules (e.g. the TrainJob name must be an RFC 1035 label). Schema defaults are
// applied to a copy first, as the apiserver defaults before it validates.
//
// Objects the webhooks see were validated by the apiserver already; `mpiguard
// check` reads files that never were, and without this would judge (and allow)
// TrainJobs the apiserver refuses: a negative activeDeadlineSeconds, 10,000 env
// entries, a 1 MB annotation, a name in capitals. Other kinds give nil.
func ValidateAsAPIServer(ctx context.Context, kind string, obj map[string]any) (field.ErrorList, error) {
	cs := schemaOf(kind)
	if cs == nil {
		return nil, nil
	}
	namespaced := kind != trainer.ClusterTrainingRuntimeKind
	v, err := cs.validators()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: runtimeDeepCopy(obj)}
	structuraldefaulting.Default(u.Object, v.structural)

	if gvk := u.GroupVersionKind(); gvk != trainer.GroupVersion.WithKind(kind) {
		return field.ErrorList{field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(),
			fmt.Sprintf("must be %s for kind %s", trainer.GroupVersion, kind))}, nil
	}
	var errs field.ErrorList
	errs = append(errs, validation.ValidateObjectMetaAccessor(u, namespaced, validation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiextensionsvalidation.ValidateCustomResource(nil, u.Object, v.openAPI)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, v.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, v.structural, u.Object)...)
	// Like the apiserver, CEL rules run only when nothing above is fatal to
	// them (a wrong type would make a rule fail to evaluate).
	if v.cel != nil && !blocking(errs) {
		celErrs, _ := v.cel.Validate(ctx, nil, v.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs, nil
}

// blocking mirrors customResourceStrategy's hasBlockingErr: type and
// unsupported-value errors stop CEL validation.
func blocking(errs field.ErrorList) bool {
	for _, e := range errs {
		if e.Type == field.ErrorTypeNotSupported || (e.Type == field.ErrorTypeInvalid && e.Detail == "must be of type object") {
			return true
		}
	}
	return false
}

func runtimeDeepCopy(obj map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
}

// PrepareValidation builds what ValidateAsAPIServer needs for kind (the CRD's
// structural schema, OpenAPI validator and compiled CEL rules, tens of
// milliseconds) unless it is built already; a caller that knows it will
// validate that kind soon starts it on another core. Other kinds do nothing.
func PrepareValidation(kind string) {
	if cs := schemaOf(kind); cs != nil {
		_, _ = cs.validators()
	}
}

// ForgetValidation drops what ValidateAsAPIServer built (each CRD's OpenAPI
// validator and compiled CEL rules: about 9 MB of live heap for TrainJob and
// ClusterTrainingRuntime together), so a caller done validating lets the
// collector have it; a later validation builds it again. `mpiguard check`
// validates documents only while it reads them: with the validators kept,
// its evaluation of the TrainJobs would carry them to its peak memory.
func ForgetValidation() { validatorsOf.Clear() }

// schemaOf is the embedded CRD schema of a Trainer kind, nil for other kinds.
func schemaOf(kind string) *crdSchema {
	switch kind {
	case trainer.TrainJobKind:
		return trainJobSchema
	case trainer.ClusterTrainingRuntimeKind:
		return clusterTrainingRuntimeSchema
	case trainer.TrainingRuntimeKind:
		return trainingRuntimeSchema
	}
	return nil
}

// schemaValidators are what ValidateAsAPIServer needs of one CRD, built once:
// compiling the CEL rules and the OpenAPI validator takes tens of milliseconds.
type schemaValidators struct {
	structural *structuralschema.Structural
	openAPI    apiextensionsvalidation.SchemaValidator
	cel        *cel.Validator
}

var validatorsOf sync.Map // *crdSchema -> func() (*schemaValidators, error)

func (c *crdSchema) validators() (*schemaValidators, error) {
	build, _ := validatorsOf.LoadOrStore(c, sync.OnceValues(func() (*schemaValidators, error) {
		s, err := c.get()
		if err != nil {
			return nil, err
		}
		openAPI, _, err := apiextensionsvalidation.NewSchemaValidator(c.props)
		if err != nil {
			return nil, fmt.Errorf("%s: OpenAPI validator: %w", c.file, err)
		}
		return &schemaValidators{structural: s, openAPI: openAPI, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
	}))
	return build.(func() (*schemaValidators, error))()
}
