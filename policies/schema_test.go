package policies_test

import (
	"context"
	"io/fs"
	"path"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/policies"
)

// schemas reads every embedded policy's parameter schema, by policy name.
func schemas(t *testing.T) map[string]apiextensionsv1.JSONSchemaProps {
	t.Helper()
	files, err := fs.Glob(policies.FS, "*/"+engine.SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]apiextensionsv1.JSONSchemaProps{}
	for _, f := range files {
		src, err := fs.ReadFile(policies.FS, f)
		if err != nil {
			t.Fatal(err)
		}
		var s apiextensionsv1.JSONSchemaProps
		if err := yaml.UnmarshalStrict(src, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[path.Dir(f)] = s
	}
	return out
}

// Every parameter schema documents each parameter and states its default
// (the one place defaults live), and every node has a type, as a CRD's
// structural schema needs.
func TestParameterSchemasDescribeAndDefaultEveryParameter(t *testing.T) {
	all := schemas(t)
	if len(all) == 0 {
		t.Fatal("no parameter schemas found")
	}
	for policy, s := range all {
		if s.Type != "object" || s.Description == "" {
			t.Errorf("%s: the schema must be an object with a description (type %q)", policy, s.Type)
		}
		if len(s.Properties) == 0 {
			t.Errorf("%s: a schema without parameters: delete it, a policy without one takes no parameters", policy)
		}
		for name, p := range s.Properties {
			if p.Description == "" {
				t.Errorf("%s: parameter %s has no description", policy, name)
			}
			if p.Default == nil {
				t.Errorf("%s: parameter %s has no default", policy, name)
			}
			typed(t, policy+"."+name, &p)
		}
	}
}

// typed checks that s and every schema inside it has a type.
func typed(t *testing.T, where string, s *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	if s.Type == "" {
		t.Errorf("%s has no type", where)
	}
	for name, p := range s.Properties {
		typed(t, where+"."+name, &p)
	}
	if s.Items != nil && s.Items.Schema != nil {
		typed(t, where+"[]", s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		typed(t, where+".*", s.AdditionalProperties.Schema)
	}
}

// A policy that reads its parameters has a schema, and one with a schema
// reads them: without a schema the engine passes a policy no parameters, so
// rules reading them would silently never match.
func TestPoliciesReadingParametersHaveSchemas(t *testing.T) {
	all := schemas(t)
	reads := map[string]bool{}
	err := fs.WalkDir(policies.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		src, err := fs.ReadFile(policies.FS, p)
		if err != nil {
			return err
		}
		if strings.Contains(string(src), "input.parameters") {
			reads[path.Dir(p)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for policy := range reads {
		if _, ok := all[policy]; !ok {
			t.Errorf("%s reads input.parameters but has no %s", policy, engine.SchemaFile)
		}
	}
	for policy := range all {
		if !reads[policy] {
			t.Errorf("%s has a %s but its Rego never reads input.parameters[%q]", policy, engine.SchemaFile, policy)
		}
	}
}

// A misspelled parameter of any embedded policy is a load error naming its
// path, never a silent fallback to the default.
func TestMisspelledParameterRejected(t *testing.T) {
	for policy, s := range schemas(t) {
		for name := range s.Properties {
			set, err := engine.DefaultPolicySet()
			if err != nil {
				t.Fatal(err)
			}
			typo := name + "s"
			set.Parameters = set.Parameters.Merge(engine.Parameters{Policies: map[string]engine.PolicySettings{
				policy: {Parameters: map[string]any{typo: 1}},
			}})
			_, err = engine.New(context.Background(), set, engine.Options{})
			want := "policies." + policy + ".parameters." + typo + ": unknown field"
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: parameter %s: load error %v, want one containing %q", policy, typo, err, want)
			}
		}
	}
}
