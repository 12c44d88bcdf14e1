package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWhichQueriesReadQuotas: the queries whose rules may read input.quotas,
// directly, through a rule or function of another package, or through input
// used whole, are told apart from those that cannot (inputreads.go).
func TestWhichQueriesReadQuotas(t *testing.T) {
	lib := `package mpiguard.lib
quota_names := {q.name | some q in input.quotas}
count_quotas(doc) := count(doc.quotas)
nodes := input.job.numNodes
`
	for _, tc := range []struct {
		name, mutate string
		want         bool
	}{
		{"reads the job only", `mutate contains {"target": "trainJob", "field": "x", "value": input.job.numNodes} if true`, false},
		{"calls a lib rule that reads the job", `mutate contains {"target": "trainJob", "field": "x", "value": lib.nodes} if true`, false},
		{"reads input.quotas", `mutate contains {"target": "trainJob", "field": "x", "value": count(input.quotas)} if true`, true},
		{"reads an element of input.quotas", `mutate contains {"target": "trainJob", "field": "x", "value": input.quotas[0].name} if true`, true},
		{"through a lib rule", `mutate contains {"target": "trainJob", "field": "x", "value": lib.quota_names} if true`, true},
		{"through a helper rule of its own", "mutate contains {\"target\": \"trainJob\", \"field\": \"x\", \"value\": n} if n := helper\nhelper := count(input.quotas)", true},
		{"input whole to a function", `mutate contains {"target": "trainJob", "field": "x", "value": lib.count_quotas(input)} if true`, true},
		{"input whole to a builtin", `mutate contains {"target": "trainJob", "field": "x", "value": object.get(input, "quotas", [])} if true`, true},
		{"input indexed by a variable", `mutate contains {"target": "trainJob", "field": "x", "value": input[k]} if some k in {"job"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := PolicySet{Modules: map[string]string{
				"lib.rego": lib,
				"p.rego":   "package mpiguard.policies.p\nimport data.mpiguard.lib\n" + tc.mutate + "\n",
				// deny reads quotas in every case: only the mutate query may differ.
				"q.rego": "package mpiguard.policies.q\ndeny contains \"x\" if count(input.quotas) > 99\n",
			}}
			c, err := compile(context.Background(), set)
			if err != nil {
				t.Fatal(err)
			}
			if c.mutate.readsQuotas != tc.want {
				t.Errorf("mutate query reads quotas: %t, want %t", c.mutate.readsQuotas, tc.want)
			}
			if !c.validate.readsQuotas || !c.all.readsQuotas {
				t.Errorf("validate and all queries read quotas: %t, %t, want both", c.validate.readsQuotas, c.all.readsQuotas)
			}
		})
	}
}

// TestMutationSeesQuotasWhenItReadsThem: a mutate rule that reads the quota
// input gets it (the mutating pass leaves it out only for rules that
// cannot read it).
func TestMutationSeesQuotasWhenItReadsThem(t *testing.T) {
	set := PolicySet{Modules: map[string]string{"p.rego": `package mpiguard.policies.p
mutate contains {"target": "podTemplate", "replicatedJob": "node", "field": "metadata.labels", "key": "quotas", "value": concat(",", [q.name | some q in input.quotas])} if true
`}}
	e, err := New(context.Background(), set, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := mpiRequest("a", 2)
	req.Quotas = []corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: "a"}}}
	m, err := e.Mutations(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var got []any
	for _, c := range m.Changes {
		got = append(got, c.Value)
	}
	if diff := cmp.Diff([]any{"gpus"}, got); diff != "" {
		t.Errorf("mutation values (-want +got):\n%s", diff)
	}
}
