package kueue

import (
	"context"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/kueuecheck"
	"github.com/mpiguard/mpiguard/test/fixtures"
	trainjobwebhook "github.com/mpiguard/mpiguard/webhooks/trainjob"
)

var _ = Describe("mpiguard as Kueue's AdmissionCheck", func() {
	It("admits a job that fits: Ready, resumed by Kueue with mpiguard's patch and deadline intact", func(ctx context.Context) {
		ns := queuedNamespace(ctx, euQueue, "16", "0")
		job := submit(ctx, ns, "fits")
		created := get(ctx, job)
		own := slices.IndexFunc(created.Spec.RuntimePatches, func(p trainer.RuntimePatch) bool { return p.Manager == engine.AdmissionManager })
		Expect(own).NotTo(BeNumerically("<", 0), "mpiguard's runtime patch on create")
		Expect(created.Spec.ActiveDeadlineSeconds).To(BeNumerically(">", 0), "mpiguard's default deadline on create")

		By("mpiguard's check is Ready and Kueue resumes the job")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			s := check(g, wl)
			g.Expect(s.State).To(Equal(kueue.CheckStateReady), describe(wl))
			g.Expect(s.Message).To(ContainSubstring("mpiguard admits the job"))
			g.Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)).To(BeTrue(), describe(wl))
			g.Expect(running(ctx, job)).To(BeTrue(), "TrainJob resumed")
		}).Should(Succeed())

		By("Kueue's updates left what mpiguard decided in place")
		resumed := get(ctx, job)
		Expect(resumed.Spec.RuntimePatches).To(ContainElement(created.Spec.RuntimePatches[own]))
		Expect(resumed.Spec.ActiveDeadlineSeconds).To(Equal(created.Spec.ActiveDeadlineSeconds))
		By("the Trainer runs it: its JobSet exists, and the quota it needs is reserved")
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(job), &jobsetv1alpha2.JobSet{})
		}).Should(Succeed())
		Expect(env.ReservedJobs(ctx, ns)).To(ConsistOf("fits"))
	})

	It("explains a job Kueue cannot place because its residency excludes every flavor of its ClusterQueue: mpiguard's reason on the check and the TrainJob", func(ctx context.Context) {
		// An "eu" namespace queued to the ClusterQueue of the us-east-1
		// flavor. Kueue v0.17 sees mpiguard's residency affinity in the pod
		// sets and never reserves the flavor, so the check is never offered.
		ns := queuedNamespace(ctx, usQueue, "", "")
		job := submit(ctx, ns, "wrong-region")

		reason := And(ContainSubstring("[data-residency]"), ContainSubstring("us-east-1"), ContainSubstring(`zone "eu"`))
		By("mpiguard's reason is on the check, which stays Pending: Kueue holds no quota for it")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			s := check(g, wl)
			g.Expect(s.State).To(Equal(kueue.CheckStatePending), describe(wl))
			g.Expect(s.Message).To(And(reason, ContainSubstring("Kueue cannot place this job"), ContainSubstring(usQueue)), describe(wl))
			g.Expect(wl.Status.Admission).To(BeNil(), describe(wl))
			gpus, reserving := clusterQueueUsage(ctx, g, usQueue)
			g.Expect(gpus).To(Equal("0"))
			g.Expect(reserving).To(BeZero())
		}).Should(Succeed())
		By("and on the TrainJob (kubectl describe)")
		Eventually(func(g Gomega) []string {
			return warnings(ctx, g, job, kueuecheck.ReasonUnplaceable)
		}).Should(ContainElement(reason))
		Expect(running(ctx, job)).To(BeFalse())
	})

	It("rejects a job larger than the namespace's whole ResourceQuota, with mpiguard's reason, and Kueue releases its quota", func(ctx context.Context) {
		// 8 GPUs asked, 4 in the quota even when idle: waiting cannot help.
		ns := queuedNamespace(ctx, euQueue, "4", "0")
		job := submit(ctx, ns, "too-large")

		By("Kueue acts on Rejected: it deactivates the Workload, evicts it and releases its ClusterQueue quota")
		var wl *kueue.Workload
		Eventually(func(g Gomega) {
			wl = workloadOf(ctx, g, job)
			g.Expect(ptr.Deref(wl.Spec.Active, true)).To(BeFalse(), describe(wl))
			g.Expect(wl.Status.Admission).To(BeNil(), describe(wl))
		}).Should(Succeed())
		Expect(running(ctx, job)).To(BeFalse())

		By("mpiguard's reason is on the check (Kueue's eviction reset it to Pending), in Kueue's event, and on the TrainJob")
		reason := ContainSubstring("[aggregate-quota]")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			s := check(g, wl)
			g.Expect(s.State).To(Equal(kueue.CheckStatePending))
			g.Expect(s.Message).To(And(reason, ContainSubstring("spec.active: true")), describe(wl))
		}).Should(Succeed())
		Eventually(func(g Gomega) []string {
			return kueueEvents(ctx, g, wl, "AdmissionCheckRejected")
		}).Should(ContainElement(reason), "Kueue's event: it saw the state Rejected and mpiguard's message")
		Eventually(func(g Gomega) []string {
			return warnings(ctx, g, job, kueuecheck.ReasonRejected)
		}).Should(ContainElement(reason), "the reason on the TrainJob (kubectl describe)")
	})

	It("makes a job over the namespace's ResourceQuota retry, and admits it once the quota has room", func(ctx context.Context) {
		ns := queuedNamespace(ctx, euQueue, "8", "8")
		job := submit(ctx, ns, "waits")

		By("Retry with mpiguard's quota message; the job stays suspended")
		Eventually(func(g Gomega) []string {
			return warnings(ctx, g, job, kueuecheck.ReasonRetry)
		}).Should(ContainElement(ContainSubstring("[aggregate-quota]")))
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			g.Expect(ptr.Deref(check(g, wl).RetryCount, 0)).To(BeNumerically(">=", 1), describe(wl))
			g.Expect(ptr.Deref(wl.Spec.Active, true)).To(BeTrue(), "a Retry does not deactivate: %s", describe(wl))
		}).Should(Succeed())
		Expect(running(ctx, job)).To(BeFalse())

		By("the pods that held the quota end: Kueue's next offer is Ready, and the job runs")
		quota := &corev1.ResourceQuota{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gpus"}, quota)).To(Succeed())
		quota.Status.Used = fixtures.ResourceList("requests.nvidia.com/gpu", "0")
		Expect(env.Client.Status().Update(ctx, quota)).To(Succeed())
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			g.Expect(check(g, wl).State).To(Equal(kueue.CheckStateReady), describe(wl))
			g.Expect(running(ctx, job)).To(BeTrue())
		}).Should(Succeed())
	})

	It("keeps the quota of a job it said Ready for while another check keeps Kueue waiting past the reservation grace", func(ctx context.Context) {
		ns := queuedNamespace(ctx, waitingQueue, "8", "0")
		job := submit(ctx, ns, "waits-for-other")

		By("mpiguard's check is Ready; the other check keeps the Workload from being admitted")
		Eventually(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			g.Expect(check(g, wl).State).To(Equal(kueue.CheckStateReady), describe(wl))
			g.Expect(held(ctx, g, job)).To(BeTrue(), "the quota it needs is reserved")
		}).Should(Succeed())

		By("for three graces: the check stays Ready and the quota stays held")
		Consistently(func(g Gomega) {
			wl := workloadOf(ctx, g, job)
			g.Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)).To(BeFalse(), describe(wl))
			g.Expect(check(g, wl).State).To(Equal(kueue.CheckStateReady), describe(wl))
			g.Expect(held(ctx, g, job)).To(BeTrue(), "the check is Ready over a released reservation")
		}, 3*reservationGrace, reservationGrace/6).Should(Succeed())

		By("a second job that fits only without the first one's quota must wait")
		second := submit(ctx, ns, "after-grace")
		Eventually(func(g Gomega) []string {
			return warnings(ctx, g, second, kueuecheck.ReasonRetry)
		}).Should(ContainElement(ContainSubstring("[aggregate-quota]")))

		By("the other check says Ready: Kueue admits the first job and resumes it")
		var wl *kueue.Workload
		Eventually(func(g Gomega) { wl = workloadOf(ctx, g, job) }).Should(Succeed())
		setOtherCheck(ctx, wl, kueue.CheckStateReady)
		Eventually(func() bool { return running(ctx, job) }).Should(BeTrue())
		Expect(running(ctx, second)).To(BeFalse())
	})

	It("runs exactly one of two jobs whose sum exceeds the namespace's ResourceQuota", func(ctx context.Context) {
		ns := queuedNamespace(ctx, euQueue, "8", "0")
		jobs := []*trainer.TrainJob{submit(ctx, ns, "first"), submit(ctx, ns, "second")}

		Eventually(func(g Gomega) {
			var runs, retried []string
			for _, job := range jobs {
				wl := workloadOf(ctx, g, job)
				if running(ctx, job) {
					runs = append(runs, job.Name)
				}
				// The other is offered again after each Retry, and refused
				// again: twice proves the first's reservation holds.
				if ptr.Deref(check(g, wl).RetryCount, 0) >= 2 {
					retried = append(retried, job.Name)
				}
			}
			g.Expect(runs).To(HaveLen(1), "running: %v", runs)
			g.Expect(retried).To(HaveLen(1), "retried twice: %v", retried)
			g.Expect(retried).NotTo(ContainElement(runs[0]))
		}).Should(Succeed())
		Expect(env.ReservedJobs(ctx, ns)).To(HaveLen(1))
	})
})

var _ = Describe("Kueue without mpiguard's AdmissionCheck", func() {
	It("resumes a job that fits with mpiguard's patch and deadline intact, although Kueue writes them away", func(ctx context.Context) {
		ns := queuedNamespace(ctx, plainQueue, "16", "0")
		job := submit(ctx, ns, "plain-fits")
		created := get(ctx, job)
		own := slices.IndexFunc(created.Spec.RuntimePatches, func(p trainer.RuntimePatch) bool { return p.Manager == engine.AdmissionManager })
		Expect(own).NotTo(BeNumerically("<", 0), "mpiguard's runtime patch on create")

		Eventually(func() bool { return running(ctx, job) }).Should(BeTrue(), "Kueue admits it and resumes it")
		resumed := get(ctx, job)
		Expect(resumed.Spec.RuntimePatches).To(ContainElement(created.Spec.RuntimePatches[own]))
		Expect(resumed.Spec.ActiveDeadlineSeconds).To(Equal(created.Spec.ActiveDeadlineSeconds))
	})

	It("leaves a Warning event with the reason on a TrainJob whose resume mpiguard denies", func(ctx context.Context) {
		// Kueue's ClusterQueue has room; the namespace's ResourceQuota has not.
		ns := queuedNamespace(ctx, plainQueue, "8", "8")
		job := submit(ctx, ns, "plain-over-quota")

		Eventually(func(g Gomega) []string {
			return warnings(ctx, g, job, trainjobwebhook.ReasonUpdateDenied)
		}).Should(ContainElement(And(ContainSubstring("[aggregate-quota]"), ContainSubstring("resume"))), "kubectl describe trainjob shows why")
		Expect(running(ctx, job)).To(BeFalse(), "the denied resume did not happen")
	})
})
