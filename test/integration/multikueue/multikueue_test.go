package multikueue

import (
	"context"
	"slices"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// dispatchTimeout bounds the whole trip: the manager's Kueue reserves, the
// worker's Kueue admits the Workload MultiKueue made there, MultiKueue
// creates the copy, the worker's Kueue resumes it and the Trainer runs it.
const dispatchTimeout = 2 * time.Minute

var _ = Describe("a TrainJob queued on a MultiKueue manager cluster", func() {
	It("is judged on the manager without its quota, dispatched, and judged and reserved on the worker, where it runs", func(ctx context.Context) {
		// 8 GPUs asked: twice the manager's quota, half the worker's.
		ns := twinNamespaces(ctx, "4", "16")
		submitted := job(ns, "dispatched").Obj()
		key := client.ObjectKeyFromObject(submitted)
		// Kueue's webhook suspends it: the create charges no quota anyway.
		// The manager's quota would refuse its resume (8 GPUs of 4), which
		// the manager's Kueue makes once the worker runs the copy.
		Expect(manager.Client.Create(ctx, submitted)).To(Succeed())

		stored := get(ctx, Default, manager.Client, key)
		Expect(ptr.Deref(stored.Spec.ManagedBy, "")).To(Equal(kueue.MultiKueueControllerName), "Kueue's webhook hands it to MultiKueue")
		Expect(ptr.Deref(stored.Spec.Suspend, false)).To(BeTrue(), "Kueue's webhook suspends it")
		entry := mpiguardPatch(stored)
		Expect(entry).NotTo(BeNil(), "mpiguard judged and mutated it on the manager (data residency's affinity)")
		Expect(manager.ReservedJobs(ctx, ns)).To(BeEmpty(), "no reservation on the manager: no pod of it runs there")

		By("the worker runs Kueue's copy: resumed, reserved against the worker's quota, its JobSet created")
		Eventually(func(g Gomega) {
			copied := get(ctx, g, worker.Client, key)
			g.Expect(copied).NotTo(BeNil(), "no copy on the worker yet; manager's Workloads: %s", describe(workloadsIn(ctx, g, manager.Client, ns)))
			g.Expect(ptr.Deref(copied.Spec.ManagedBy, trainjobutil.TrainJobControllerName)).To(Equal(trainjobutil.TrainJobControllerName), "the copy is the worker Trainer's")
			g.Expect(ptr.Deref(copied.Spec.Suspend, true)).To(BeFalse(), "copy not resumed yet; worker's Workloads: %s", describe(workloadsIn(ctx, g, worker.Client, ns)))
			g.Expect(worker.Client.Get(ctx, key, &jobsetv1alpha2.JobSet{})).To(Succeed())
		}).WithTimeout(dispatchTimeout).Should(Succeed())
		Expect(worker.ReservedJobs(ctx, ns)).To(ConsistOf("dispatched"), "the worker's QuotaReservation holds the copy")
		// MultiKueue makes the worker's Workload, without an owner, and
		// creates the copy only once the worker admitted it (Kueue v0.17:
		// MultiKueueWaitForWorkloadAdmitted): mpiguard's check there had no
		// job to judge, and the webhook judged and reserved the resume.
		Eventually(func(g Gomega) {
			wls := workloadsIn(ctx, g, worker.Client, ns)
			g.Expect(wls).To(HaveLen(1))
			g.Expect(meta.IsStatusConditionTrue(wls[0].Status.Conditions, kueue.WorkloadAdmitted)).To(BeTrue(), describe(wls))
			// Its check says so, not "no mpiguard policy applies".
			g.Expect(wls[0].Status.AdmissionChecks).To(ContainElement(And(
				HaveField("State", kueue.CheckStateReady),
				HaveField("Message", ContainSubstring("dispatched here by MultiKueue")),
			)), describe(wls))
		}).Should(Succeed())
		copied := get(ctx, Default, worker.Client, key)
		Expect(mpiguardPatch(copied)).To(Equal(entry), "the worker judged the copy with the entry it writes itself: the manager's")

		By("the manager's Workload is admitted and its job resumed, not judged by the manager's quota; still nothing reserved or run there")
		Eventually(func(g Gomega) {
			wls := workloadsIn(ctx, g, manager.Client, ns)
			g.Expect(wls).To(HaveLen(1))
			g.Expect(meta.IsStatusConditionTrue(wls[0].Status.Conditions, kueue.WorkloadAdmitted)).To(BeTrue(), describe(wls))
			g.Expect(ptr.Deref(get(ctx, g, manager.Client, key).Spec.Suspend, true)).To(BeFalse(), "the manager's job resumed")
		}).WithTimeout(dispatchTimeout).Should(Succeed())
		Expect(manager.ReservedJobs(ctx, ns)).To(BeEmpty())
		Expect(apierrors.IsNotFound(manager.Client.Get(ctx, key, &jobsetv1alpha2.JobSet{}))).To(BeTrue(), "the manager's Trainer skips a MultiKueue job")
	})

	// Denied on its create, which Kueue's webhook suspended: no quota is
	// judged there, wherever the job runs, so this spec passes with
	// RunsElsewhere ignored too (the first one does not).
	It("is denied on the manager when it breaks data residency or max-duration, and never dispatched", func(ctx context.Context) {
		ns := twinNamespaces(ctx, "4", "16")
		nsObj := &corev1.Namespace{}
		Expect(manager.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		nsObj.Annotations = map[string]string{"mpiguard.io/max-duration-hours": "1"}
		Expect(manager.Client.Update(ctx, nsObj)).To(Succeed())

		for _, c := range []struct {
			job    *trainer.TrainJob
			policy string
			why    string
		}{
			{job(ns, "pinned-us").RuntimePatch(fixtures.UserPatch("node", nil, map[string]string{regionKey: "us-east-1"})).Obj(), "[data-residency]", "us-east-1"},
			{job(ns, "too-long").ActiveDeadlineSeconds(7200).Obj(), "[max-duration]", "allows at most 1 hour"},
		} {
			err := manager.Client.Create(ctx, c.job)
			Expect(err).To(HaveOccurred(), "%s admitted", c.job.Name)
			Expect(err.Error()).To(And(ContainSubstring(c.policy), ContainSubstring(c.why)))
		}

		By("nothing reaches Kueue on either cluster")
		Consistently(func(g Gomega) {
			g.Expect(workloadsIn(ctx, g, manager.Client, ns)).To(BeEmpty())
			g.Expect(workloadsIn(ctx, g, worker.Client, ns)).To(BeEmpty())
			var copies trainer.TrainJobList
			g.Expect(worker.Client.List(ctx, &copies, client.InNamespace(ns))).To(Succeed())
			g.Expect(copies.Items).To(BeEmpty())
		}).WithTimeout(5 * time.Second).Should(Succeed())
	})
})

// mpiguardPatch is mpiguard's runtime-patch entry of job, nil without one.
func mpiguardPatch(job *trainer.TrainJob) *trainer.RuntimePatch {
	i := slices.IndexFunc(job.Spec.RuntimePatches, func(p trainer.RuntimePatch) bool { return p.Manager == engine.AdmissionManager })
	if i < 0 {
		return nil
	}
	return &job.Spec.RuntimePatches[i]
}

func describe(wls []kueue.Workload) string {
	var out string
	for _, wl := range wls {
		out += wl.Name + ": admission checks " + checks(wl) + "; conditions " + conditions(wl) + "\n"
	}
	return out
}

func checks(wl kueue.Workload) string {
	var out string
	for _, c := range wl.Status.AdmissionChecks {
		out += string(c.Name) + "=" + string(c.State) + " (" + c.Message + ") "
	}
	return out
}

func conditions(wl kueue.Workload) string {
	var out string
	for _, c := range wl.Status.Conditions {
		out += c.Type + "=" + string(c.Status) + " (" + c.Reason + ": " + c.Message + ") "
	}
	return out
}
