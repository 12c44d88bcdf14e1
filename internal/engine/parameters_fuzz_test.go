package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/policies"
)

// FuzzParseParameters reads arbitrary parameters documents (the ConfigMap
// admins edit at run time). For every document: no panic; a document read is
// one whose enforcements are all known, which reads back the same once
// written out, and which merges as documented (overlaying nothing or itself
// changes nothing, overlaying it on nothing gives it back); a refused one
// says so with "parameters:".
func FuzzParseParameters(f *testing.F) {
	defaults, err := policies.FS.ReadFile(policies.ParametersFile)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(defaults)
	for _, doc := range []string{
		"policies:\n  slots-gpus:\n    enforcement: warn\n    exemptNamespaces: [sandbox, \"team-x-*\"]\n    parameters: {mode: at-most}\n",
		"policies:\n  max-duration:\n    enforcement: dryrun\n    parameters:\n      maxHours: 1.5\n      defaultHours: 1e3\n",
		"policies:\n  data-residency:\n    parameters:\n      zones: {eu: [eu-west-1], us: []}\n",
		"policies:\n  x:\n    enforcement: block\n",
		"policies:\n  x:\n    unknown: 1\n",
		"policies: {a: {}, b: null}\n",
		"policies: []\n",
		"{}",
		"",
		"policies:\n  a: &x {enforcement: warn}\n  b: *x\n",
	} {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseParameters(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "parameters: ") {
				t.Fatalf("error without its prefix: %v", err)
			}
			return
		}
		for name, s := range p.Policies {
			switch s.Enforcement {
			case "", EnforceDeny, EnforceWarn, EnforceDryRun:
			default:
				t.Fatalf("policy %q: enforcement %q accepted", name, s.Enforcement)
			}
			_ = s.exempt("team-a")
		}

		written, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("writing the parameters read: %v", err)
		}
		again, err := ParseParameters(written)
		if err != nil {
			t.Fatalf("the parameters read do not read back: %v\n%s", err, written)
		}
		equal := func(what string, want, got Parameters) {
			t.Helper()
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s (-want +got):\n%s", what, diff)
			}
		}
		equal("written and read back", p, again)
		equal("p overlaid with nothing", p, p.Merge(Parameters{}))
		equal("p overlaid with itself", p, p.Merge(p))
		equal("nothing overlaid with p", p, Parameters{}.Merge(p))
	})
}
