package quota

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/mpiguard/mpiguard/internal/render"
)

// objectsView is a Launcher and 2 Workers with the objects the Trainer and
// the JobSet controller create for them; existing counts those that exist.
func objectsView(existingSecret int32) *render.JobView {
	one := resource.MustParse("1")
	perPod := render.Charge{Pods: 1, Requests: corev1.ResourceList{corev1.ResourceCPU: one}}
	obj := func(group, kind, resource, creator, rj string, n, existing int32) render.Objects {
		return render.Objects{GVK: schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, Resource: resource, Creator: creator, ReplicatedJob: rj, Count: n, Existing: existing}
	}
	return &render.JobView{
		ReplicatedJobs: []render.ReplicatedJobView{
			{Name: "node", Role: render.RoleWorker, Pods: 2, PerPod: perPod},
			{Name: "launcher", Role: render.RoleLauncher, Pods: 1, PerPod: perPod},
		},
		Objects: []render.Objects{
			obj("", "ConfigMap", "configmaps", render.CreatorTrainer, "", 1, 0),
			obj("", "Secret", "secrets", render.CreatorTrainer, "", 1, existingSecret),
			obj("", "ConfigMap", "configmaps", render.CreatorTrainer, "", 1, 0),
			obj("jobset.x-k8s.io", "JobSet", "jobsets", render.CreatorTrainer, "", 1, 0),
			obj("", "Service", "services", render.CreatorJobSet, "", 1, 0),
			obj("batch", "Job", "jobs", render.CreatorJobSet, "node", 1, 0),
			obj("batch", "Job", "jobs", render.CreatorJobSet, "launcher", 1, 0),
		},
	}
}

func quotaOf(scoped bool, hard ...string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for _, name := range hard {
		q.Spec.Hard[corev1.ResourceName(name)] = resource.MustParse("100")
	}
	if scoped {
		q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
	}
	return q
}

// strs prints a ResourceList's amounts.
func strs(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func TestObjectCharge(t *testing.T) {
	cases := map[string]struct {
		view     *render.JobView
		quota    *corev1.ResourceQuota
		existing map[string]int32
		want     map[string]string
	}{
		"count names": {
			view:  objectsView(0),
			quota: quotaOf(false, "count/jobs.batch", "count/configmaps", "count/secrets", "count/services", "count/jobsets.jobset.x-k8s.io", "count/pods"),
			want:  map[string]string{"count/jobs.batch": "2", "count/configmaps": "2", "count/secrets": "1", "count/services": "1", "count/jobsets.jobset.x-k8s.io": "1", "count/pods": "3"},
		},
		"legacy names": {
			view:  objectsView(0),
			quota: quotaOf(false, "configmaps", "secrets", "services", "persistentvolumeclaims", "services.loadbalancers"),
			want:  map[string]string{"configmaps": "2", "secrets": "1", "services": "1"},
		},
		"an existing Secret is not charged again": {
			view:  objectsView(1),
			quota: quotaOf(false, "count/secrets", "count/configmaps"),
			want:  map[string]string{"count/configmaps": "2"},
		},
		"a scoped quota counts pods only": {
			view:  objectsView(0),
			quota: quotaOf(true, "count/jobs.batch", "pods"),
			want:  map[string]string{"pods": "3"},
		},
		"a Worker pod exists: everything but the Jobs goes": {
			view:     objectsView(0),
			quota:    quotaOf(false, "count/jobs.batch", "count/configmaps", "pods"),
			existing: map[string]int32{"node": 1},
			want:     map[string]string{"count/jobs.batch": "2", "pods": "2"},
		},
		"the Workers' pods all exist: their Job goes": {
			view:     objectsView(0),
			quota:    quotaOf(false, "count/jobs.batch", "count/configmaps", "pods"),
			existing: map[string]int32{"node": 2},
			want:     map[string]string{"count/jobs.batch": "1", "pods": "1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := strs(Charge(Missing(PartsOf(tc.view), tc.existing), tc.quota))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("charge (-want +got):\n%s", diff)
			}
		})
	}
}

func TestObjectCounted(t *testing.T) {
	cases := map[corev1.ResourceName]corev1.ResourceName{
		"count/jobs.batch": "count/jobs.batch", "configmaps": "count/configmaps", "secrets": "count/secrets",
		"persistentvolumeclaims": "count/persistentvolumeclaims", "count/pods": "", "pods": "", "requests.cpu": "", "services.nodeports": "",
	}
	for name, want := range cases {
		got, ok := ObjectCounted(name)
		if got != want || ok != (want != "") {
			t.Errorf("ObjectCounted(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

// The part of no replicated job survives the shapes table (it has none).
func TestPartsOfObjects(t *testing.T) {
	parts := PartsOf(objectsView(0))
	want := []Part{
		{ReplicatedJob: "node", Pods: 2, Jobs: 1},
		{ReplicatedJob: "launcher", Pods: 1, Jobs: 1},
		{Objects: corev1.ResourceList{"count/configmaps": resource.MustParse("2"), "count/secrets": resource.MustParse("1"),
			"count/jobsets.jobset.x-k8s.io": resource.MustParse("1"), "count/services": resource.MustParse("1")}},
	}
	for i := range parts {
		parts[i].PerPod, parts[i].Scope = nil, Scope{}
	}
	if diff := cmp.Diff(want, parts, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
}
