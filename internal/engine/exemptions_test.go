package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Exempt namespaces set over the defaults add to them: an admin who exempts
// a namespace from istio-opt-out keeps istio-system exempt, unless the
// document says replaceExemptNamespaces: true.
func TestMergeAddsExemptNamespacesUnlessReplaced(t *testing.T) {
	embedded, err := DefaultPolicySet()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, doc string
		want      []string
		exempt    map[string]bool
	}{
		{name: "added to the default", doc: "policies: {istio-opt-out: {exemptNamespaces: [lab]}}",
			want: []string{"istio-system", "lab"}, exempt: map[string]bool{"istio-system": true, "lab": true, "team-a": false}},
		{name: "the default again adds nothing", doc: "policies: {istio-opt-out: {exemptNamespaces: [istio-system]}}",
			want: []string{"istio-system"}, exempt: map[string]bool{"istio-system": true}},
		{name: "only enforcement set keeps the default", doc: "policies: {istio-opt-out: {enforcement: warn}}",
			want: []string{"istio-system"}, exempt: map[string]bool{"istio-system": true}},
		{name: "replaced on purpose", doc: "policies: {istio-opt-out: {exemptNamespaces: [lab], replaceExemptNamespaces: true}}",
			want: []string{"lab"}, exempt: map[string]bool{"istio-system": false, "lab": true}},
		{name: "every exemption removed on purpose", doc: "policies: {istio-opt-out: {exemptNamespaces: [], replaceExemptNamespaces: true}}",
			want: []string{}, exempt: map[string]bool{"istio-system": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseParameters([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			// As the ConfigMaps are: merged among themselves, then over the embedded set.
			set, err := embedded.Overlay(nil, Parameters{}.Merge(o))
			if err != nil {
				t.Fatal(err)
			}
			got := set.Parameters.Policies["istio-opt-out"]
			if diff := cmp.Diff(tc.want, got.ExemptNamespaces, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("exemptNamespaces (-want +got):\n%s", diff)
			}
			for ns, want := range tc.exempt {
				if got.exempt(ns) != want {
					t.Errorf("namespace %s exempt = %v, want %v", ns, !want, want)
				}
			}
		})
	}
}
