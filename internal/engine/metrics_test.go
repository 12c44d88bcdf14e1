package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mpiguard/mpiguard/internal/input"
)

// Denials are counted per policy and namespace, and only denials: a warning,
// a dry run, an exempt namespace or a pass adds no series.
func TestDenialsByPolicyAndNamespace(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	set := demoSet(2, PolicySettings{ExemptNamespaces: []string{"sandbox"}})
	warn := demoSet(2, PolicySettings{Enforcement: EnforceWarn})
	deny, err := New(ctx, set, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []*input.Source{mpiRequest("a", 4), mpiRequest("a", 5), mpiRequest("b", 4), mpiRequest("b", 2), mpiRequest("sandbox", 4)} {
		decide(t, deny, req)
	}
	// A second engine on the same registry (another manager) counts into it.
	warner, err := New(ctx, warn, Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	decide(t, warner, mpiRequest("c", 4))

	got := map[string]float64{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "mpiguard_policy_denials_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			got[labels["policy"]+" "+labels["namespace"]] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{"node-limit a": 2, "node-limit b": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mpiguard_policy_denials_total by policy and namespace (-want +got):\n%s", diff)
	}
}
