package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/internal/render"
)

// ChargedFor follows the pod quota evaluator's names (through
// render.Charge.QuotaUsage): count/pods counts pods, extended resources count
// only as requests.<name>, quota names pods are never charged for are skipped.
func TestChargedFor(t *testing.T) {
	c := render.Charge{
		Pods:     1,
		Requests: corev1.ResourceList{"cpu": resource.MustParse("4"), "nvidia.com/gpu": resource.MustParse("2")},
		Limits:   corev1.ResourceList{"cpu": resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("2")},
	}
	usage := c.QuotaUsage()
	type got struct {
		Amount  string
		Charged bool
	}
	cases := map[corev1.ResourceName]got{
		"pods":                    {"1", true},
		"count/pods":              {"1", true},
		"cpu":                     {"4", true},
		"requests.cpu":            {"4", true},
		"limits.cpu":              {"8", true},
		"requests.nvidia.com/gpu": {"2", true},
		"limits.nvidia.com/gpu":   {"0", true},
		"requests.memory":         {"0", true},
		"services":                {"0", false},
	}
	for name, want := range cases {
		amount, ok := ChargedFor(name, usage)
		if diff := cmp.Diff(want, got{amount.String(), ok}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}
