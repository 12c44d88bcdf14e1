package kueuecheck

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

const region = "topology.kubernetes.io/region"

// inZones is a pod set whose pods require a region among zones, as
// mpiguard's residency placement writes it.
func inZones(name string, zones ...string) kueue.PodSet {
	ps := kueue.PodSet{Name: kueue.PodSetReference(name), Count: 2}
	if len(zones) > 0 {
		ps.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: region, Operator: corev1.NodeSelectorOpIn, Values: zones}}}},
		}}}
	}
	return ps
}

func TestPlaceable(t *testing.T) {
	us := flavor("us", map[string]string{region: "us-east-1"})
	eu := flavor("eu", map[string]string{region: "eu-west-1"})
	for _, tc := range []struct {
		name    string
		podSets []kueue.PodSet
		flavors []*kueue.ResourceFlavor
		want    bool
	}{
		{"affinity matches no flavor", []kueue.PodSet{inZones("launcher", "eu-west-1", "eu-central-1")}, []*kueue.ResourceFlavor{us}, false},
		{"one pod set of two matches no flavor", []kueue.PodSet{inZones("launcher"), inZones("node", "eu-west-1")}, []*kueue.ResourceFlavor{us}, false},
		{"affinity matches one flavor", []kueue.PodSet{inZones("launcher", "eu-west-1"), inZones("node", "eu-west-1")}, []*kueue.ResourceFlavor{us, eu}, true},
		{"no affinity", []kueue.PodSet{inZones("launcher")}, []*kueue.ResourceFlavor{us}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wl := &kueue.Workload{Spec: kueue.WorkloadSpec{PodSets: tc.podSets}}
			if got := placeable(wl, tc.flavors); got != tc.want {
				t.Errorf("placeable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAssignAll(t *testing.T) {
	cq := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "cq"}, Spec: kueue.ClusterQueueSpec{ResourceGroups: []kueue.ResourceGroup{
		{CoveredResources: []corev1.ResourceName{"cpu", "memory"}, Flavors: []kueue.FlavorQuotas{{Name: "cpu-us"}}},
		{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"}, Flavors: []kueue.FlavorQuotas{{Name: "gpu-us"}, {Name: "gpu-eu"}}},
	}}}
	wl := &kueue.Workload{Spec: kueue.WorkloadSpec{PodSets: []kueue.PodSet{inZones("launcher"), inZones("node")}}}
	gpu := map[corev1.ResourceName]kueue.ResourceFlavorReference{"nvidia.com/gpu": "gpu-eu"}
	want := &kueue.Admission{ClusterQueue: "cq", PodSetAssignments: []kueue.PodSetAssignment{
		{Name: "launcher", Flavors: gpu, Count: ptr.To[int32](2)},
		{Name: "node", Flavors: gpu, Count: ptr.To[int32](2)},
	}}
	if diff := cmp.Diff(want, assignAll(wl, cq, "gpu-eu")); diff != "" {
		t.Errorf("assignAll (-want +got):\n%s", diff)
	}
}
