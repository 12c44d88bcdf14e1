package admission

import (
	"context"
	"fmt"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/reservations/retire"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

var _ = Describe("releasing reservations while creates keep coming", func() {
	// Every admitted create rewrites the namespace's QuotaReservation, so the
	// retiring controller's write of the entries it releases races every
	// create. Losing that race used to end its reconcile in a conflict and
	// decide again after a growing backoff: under a stream of creates, the
	// entries it should release piled up and counted against the quota.
	It("releases each suspended job's entry without losing a write to the admissions, and no entry outlives the stream", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("stream-"+ns, "1"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "100000"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		errors := func() float64 {
			return framework.Counter("controller_runtime_reconcile_errors_total", map[string]string{"controller": "quotareservations"})
		}
		before := errors()
		// Four tenants' pipelines at once, each suspending its jobs a few
		// creates after making them.
		const streams, creates, lag = 4, 25, 3
		var wg sync.WaitGroup
		for s := range streams {
			wg.Go(func() {
				defer GinkgoRecover()
				jobs := make([]*trainer.TrainJob, 0, creates)
				for i := range creates {
					jobs = append(jobs, admitted(ctx, fixtures.TrainJob(ns, fmt.Sprintf("stream-%d-%03d", s, i), rt.Name).NumNodes(2).NumProcPerNode(1).Obj()))
					// A suspended job starts no pods: its entry is released
					// (Suspended) while the next creates write the object.
					if i >= lag {
						suspend(ctx, jobs[i-lag])
					}
				}
				for _, job := range jobs[creates-lag:] {
					suspend(ctx, job)
				}
			})
		}
		wg.Wait()
		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).Should(BeEmpty(), "every job is suspended: no entry holds quota")
		Expect(errors()-before).To(BeZero(), "a reconcile of the retiring controller failed: it lost a write to an admission")
	})
})

var _ = Describe("a job deleted before its pods exist", func() {
	It("gives back its quota as soon as its deletion is seen, not after the grace, so the job submitted again fits", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("deleted-"+ns, "1"))
		// Room for one job of 2 Workers x 1 GPU.
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "2"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		job := func() *trainer.TrainJob {
			return fixtures.TrainJob(ns, "retry-me", rt.Name).NumNodes(2).NumProcPerNode(1).Obj()
		}
		first := admitted(ctx, job())
		Expect(env.ReservedJobs(ctx, ns)).To(ConsistOf("retry-me"), "no pods exist here: the admitted job holds its GPUs")
		deleted := func() float64 {
			return framework.Counter("mpiguard_quota_reservations_released_total", map[string]string{"reason": retire.ReasonDeleted})
		}
		before := deleted()

		Expect(env.Client.Delete(ctx, first)).To(Succeed())
		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).Should(BeEmpty())
		// Released because its deletion was seen, not because the grace
		// passed without the job (NeverCreated): that is what frees the
		// quota at once in a cluster whose grace is 30 s.
		// The counter moves just after the write that removes the entry.
		Eventually(func() float64 { return deleted() - before }).Should(Equal(1.0), "the entry was not released as Deleted")
		Eventually(func() error { return env.Client.Create(ctx, job()) }).Should(Succeed(), "the job submitted again does not fit")
	})
})

// suspend suspends a stored TrainJob (an update the webhooks admit).
func suspend(ctx context.Context, job *trainer.TrainJob) {
	GinkgoHelper()
	job.Spec.Suspend = ptr.To(true)
	Expect(env.Client.Update(ctx, job)).To(Succeed())
}
