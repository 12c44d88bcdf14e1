package engine

import (
	"context"
	"math/big"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// objectQuotaNames are the quota names the fuzzer picks from: every kind a
// job creates, legacy names, and names that count nothing a job creates.
var objectQuotaNames = []corev1.ResourceName{
	"count/jobs.batch", "count/configmaps", "configmaps", "count/secrets", "secrets", "count/services", "services",
	"count/persistentvolumeclaims", "persistentvolumeclaims", "count/jobsets.jobset.x-k8s.io",
	"count/podgroups.scheduling.x-k8s.io", "count/pods", "count/deployments.apps", "services.loadbalancers",
}

// FuzzObjectCounts derives the objects a job creates from fuzzed runtime
// shapes (more replicated jobs, replicas and parallelism, DNS hostnames on
// or off, volume claim policies, a coscheduling gang), marks some as
// existing, charges them against a fuzzed object-count quota with another
// admitted job holding some of it, and decides with the embedded policies.
// For every input: no panic, no evaluation error, the reservation's charge
// (quota.Charge of PartsOf) equals what input.job.objects says the job
// needs, and object-quota denies exactly when a quota name's need exceeds
// what it has free.
func FuzzObjectCounts(f *testing.F) {
	f.Add(uint8(0), int32(1), int32(1), true, uint8(0), false, uint8(0), uint8(0), "count/jobs.batch", "1", "0", true, false)
	f.Add(uint8(1), int32(2), int32(1), true, uint8(1), true, uint8(1), uint8(3), "configmaps", "11", "10", false, true)
	f.Add(uint8(3), int32(1<<30), int32(0), false, uint8(2), true, uint8(255), uint8(7), "count/services", "0", "1k", true, false)
	f.Add(uint8(2), int32(-1), int32(65536), true, uint8(0), false, uint8(2), uint8(1), "secrets", "1500m", "999999999999999999999", true, true)
	f.Fuzz(func(t *testing.T, extra uint8, replicas, parallelism int32, dns bool, claims uint8, gang bool,
		existing, nameIndex uint8, name, hard, used string, reserve, resume bool) {
		hardList, ok := quantityList(map[corev1.ResourceName]string{corev1.ResourceName(name): hard}, true)
		if !ok || replicas < 0 || parallelism < 0 {
			return // the apiserver refuses the quota, or the runtime
		}
		usedList, ok := quantityList(map[corev1.ResourceName]string{corev1.ResourceName(name): used}, true)
		if !ok {
			return
		}
		rb := fixtures.MPIRuntime("openmpi")
		spec := rb.Spec()
		for i := range int(extra % 4) {
			rj := spec.Template.Spec.ReplicatedJobs[0].DeepCopy()
			rj.Name = []string{"metrics", "init", "eval"}[i%3] + string(rune('a'+i))
			rj.Replicas = replicas
			rj.Template.Spec.Parallelism = ptr.To(parallelism)
			spec.Template.Spec.ReplicatedJobs = append(spec.Template.Spec.ReplicatedJobs, *rj)
		}
		spec.Template.Spec.Network = &jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(dns)}
		for i := range int(claims % 3) {
			var t corev1.PersistentVolumeClaim
			t.Name = string(rune('a' + i))
			spec.Template.Spec.VolumeClaimPolicies = append(spec.Template.Spec.VolumeClaimPolicies, jobsetv1alpha2.VolumeClaimPolicy{Templates: []corev1.PersistentVolumeClaim{t}})
		}
		if gang {
			spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Coscheduling: &trainer.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](60)}}}
		}
		rt := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "openmpi"}, Spec: spec}
		tj := fixtures.TrainJob("team-a", "job", "openmpi").NumNodes(2).Obj()
		if err := render.ApplyDefaults(tj, rt); err != nil {
			t.Fatalf("ApplyDefaults: %v", err)
		}
		e, r := fuzzEngine(t)
		ctx := context.Background()
		view, err := r.Render(ctx, render.Input{TrainJob: tj, Runtime: rt, OwnManager: AdmissionManager})
		if err != nil {
			return // not renderable: refused with the renderer's reason
		}
		// Some objects exist already (a Secret kept, a suspended job's Jobs).
		for i := range view.Objects {
			if int(nameIndex)%len(view.Objects) == i || existing%2 == 1 {
				view.Objects[i].Existing = min(int32(existing), view.Objects[i].Count)
			}
		}
		q := fixtures.ResourceQuota("team-a", "team-a")
		q.Spec.Hard, q.Status.Hard, q.Status.Used = hardList, hardList, usedList
		if other := objectQuotaNames[int(nameIndex)%len(objectQuotaNames)]; other != corev1.ResourceName(name) {
			q.Spec.Hard[other], q.Status.Hard[other] = hardList[corev1.ResourceName(name)], hardList[corev1.ResourceName(name)]
		}
		var holders []quota.Reservation
		if reserve {
			holders = append(holders, quota.Reservation{TrainJob: "team-a/other", UID: "other", Parts: quota.PartsOf(view)})
		}
		req := &input.Source{
			Operation: Create, User: "alice", TrainJob: tj, View: view, Quotas: []corev1.ResourceQuota{*q}, Reservations: holders,
			Namespace: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}},
			Runtime:   input.RuntimeMeta{Kind: trainer.ClusterTrainingRuntimeKind, Name: rt.Name},
		}
		if resume {
			old := tj.DeepCopy()
			old.Spec.Suspend = ptr.To(true)
			req.Operation, req.OldTrainJob = Update, old
		}
		d, err := e.Decide(ctx, request(req))
		if err != nil {
			t.Fatalf("decision: %v", err)
		}

		in := quota.ObjectsInputOf(view, req.Quotas, quota.ReservedOfEach(req.Quotas, holders))
		charged := quota.Charge(quota.PartsOf(view), q)
		wantDeny := false
		for _, oq := range in.Quotas {
			need, _ := new(big.Int).SetString(oq.Milli.String(), 10)
			amount := charged[corev1.ResourceName(oq.Name)]
			if got := quota.Milli(amount); got.Cmp(need) != 0 {
				t.Fatalf("%s: the reservation charges %s milli, input.job.objects says the job needs %s", oq.Name, got, need)
			}
			h, _ := new(big.Int).SetString(oq.Hard.String(), 10)
			u, _ := new(big.Int).SetString(oq.Used.String(), 10)
			held, _ := new(big.Int).SetString(oq.Held.String(), 10)
			free := new(big.Int).Sub(new(big.Int).Sub(h, u), held)
			if need.Sign() > 0 && need.Cmp(free) > 0 {
				wantDeny = true
			}
		}
		denied := false
		for _, v := range d.Denials() {
			if v.Policy == "object-quota" {
				denied = true
				if v.Message == "" {
					t.Fatalf("object-quota denial without a message")
				}
			}
		}
		if denied != wantDeny {
			t.Fatalf("object-quota denied %t, want %t (quotas %+v; violations %+v)", denied, wantDeny, in.Quotas, d.Violations)
		}
	})
}
