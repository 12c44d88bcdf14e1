package render

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// limitItemProblems is LimitRanger's validation of one item: the reasons it
// gives (word for word up to the LimitRange's name) and the field of each.
func TestLimitItemProblemsAsLimitRanger(t *testing.T) {
	path := field.NewPath("spec", "containers").Key("node")
	cases := map[string]struct {
		item             corev1.LimitRangeItem
		requests, limits corev1.ResourceList
		kind             string
		want             []string // "field: start of the detail"; none: allowed
	}{
		"ratio exceeded": {
			item:     corev1.LimitRangeItem{MaxLimitRequestRatio: rl("cpu=2")},
			requests: rl("cpu=1"), limits: rl("cpu=4"), kind: "Container",
			want: []string{"spec.containers[node].resources.limits[cpu]: cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000 (limit 4, request 1; "},
		},
		"ratio met": {
			item:     corev1.LimitRangeItem{MaxLimitRequestRatio: rl("cpu=2")},
			requests: rl("cpu=1"), limits: rl("cpu=2"), kind: "Container",
		},
		"ratio without a limit": {
			item:     corev1.LimitRangeItem{MaxLimitRequestRatio: rl("memory=1")},
			requests: rl("memory=1Gi"), kind: "Container",
			want: []string{"spec.containers[node].resources.limits[memory]: memory max limit to request ratio per Container is 1, but no limit is specified or limit is 0"},
		},
		"ratio without a request": {
			item:   corev1.LimitRangeItem{MaxLimitRequestRatio: rl("cpu=2")},
			limits: rl("cpu=1"), kind: "Container",
			want: []string{"spec.containers[node].resources.requests[cpu]: cpu max limit to request ratio per Container is 2, but no request is specified or request is 0"},
		},
		"pod minimum of a resource no container requests": {
			item:     corev1.LimitRangeItem{Min: rl("ephemeral-storage=1Gi")},
			requests: rl("cpu=1"), kind: "Pod",
			want: []string{"spec.containers[node].resources.requests[ephemeral-storage]: minimum ephemeral-storage usage per Pod is 1Gi, but no request is specified"},
		},
		"request above the maximum with a limit within it": {
			item:     corev1.LimitRangeItem{Max: rl("cpu=2")},
			requests: rl("cpu=3"), limits: rl("cpu=2"), kind: "Container",
			want: []string{"spec.containers[node].resources.requests[cpu]: maximum cpu usage per Container is 2, but request is 3"},
		},
		// LimitRanger compares in whole milli units, rounded up.
		"a sub-milli request rounds up to the minimum": {
			item:     corev1.LimitRangeItem{Min: rl("cpu=1m")},
			requests: rl("cpu=500u"), kind: "Container",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, e := range limitItemProblems("lr", &tc.item, tc.requests, tc.limits, path, tc.kind) {
				got = append(got, e.Field+": "+e.Detail)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems %q, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n got %s\nwant %s...", i, got[i], tc.want[i])
				}
			}
		})
	}
}
