package admission

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	kueueapi "sigs.k8s.io/kueue/pkg/util/api"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// On a MultiKueue manager cluster a TrainJob carries spec.managedBy
// kueue.x-k8s.io/multikueue: the Trainer here skips it and Kueue runs a copy
// on a worker cluster. No pod of it is created here, so this namespace's
// quota neither judges nor holds it; every other policy does judge it, before
// it is dispatched. The copy on the worker cluster is an ordinary TrainJob.
var _ = Describe("a TrainJob that Kueue's MultiKueue runs on a worker cluster", func() {
	var ns, runtime string
	BeforeEach(func(ctx context.Context) {
		ns = env.Namespace(ctx, map[string]string{"mpiguard.io/data-residency": "eu"})
		runtime = createRuntime(ctx, gpuWorkers("multikueue-"+ns, "4")).Name
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "4"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
	})
	// job is 2 Workers x 4 GPUs: twice the namespace's quota.
	job := func(name string) *fixtures.TrainJobBuilder {
		return fixtures.TrainJob(ns, name, runtime).NumNodes(2).NumProcPerNode(4)
	}

	It("is admitted over the namespace's quota, reserves nothing and holds nothing for the jobs after it", func(ctx context.Context) {
		created := admitted(ctx, job("dispatched").ManagedBy(kueue.MultiKueueControllerName).Obj())
		Expect(mpiguardPatch(created)).NotTo(BeNil(), "the policies judged and mutated it (data residency's affinity)")
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty(), "no reservation entry: no pod of it is created here")

		// Kueue on the manager admits the Workload by resuming the job.
		queued := admitted(ctx, job("queued").ManagedBy(kueue.MultiKueueControllerName).Suspend(true).Obj())
		queued.Spec.Suspend = ptr.To(false)
		Expect(env.Client.Update(ctx, queued)).To(Succeed(), "the resume is judged without the local quota")
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty(), "no reservation entry for the resume either")

		// A job that does run here finds the namespace's 4 GPUs free: neither
		// MultiKueue job is counted as holding any of them.
		admitted(ctx, fixtures.TrainJob(ns, "local", runtime).NumNodes(1).NumProcPerNode(4).Obj())
		Expect(env.ReservedJobs(ctx, ns)).To(Equal([]string{"local"}))
	})

	It("has a copy on the worker cluster that is an ordinary TrainJob: judged with the entry mpiguard wrote on the manager, and reserved", func(ctx context.Context) {
		queued := admitted(ctx, job("queued").ManagedBy(kueue.MultiKueueControllerName).Suspend(true).Obj())
		Expect(mpiguardPatch(queued)).NotTo(BeNil())

		// The worker cluster, played by another namespace of this apiserver
		// with room for the job. Kueue's adapter (v0.16.1) creates the copy
		// while the manager's job is still suspended: its metadata and spec,
		// Kueue's labels, no spec.managedBy (so the worker's Trainer runs it).
		worker := env.Namespace(ctx, map[string]string{"mpiguard.io/data-residency": "eu"})
		createQuota(ctx, fixtures.ResourceQuota(worker, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		remote := &trainer.TrainJob{ObjectMeta: kueueapi.CloneObjectMetaForCreation(&queued.ObjectMeta), Spec: *queued.Spec.DeepCopy()}
		remote.Namespace = worker
		remote.Labels = map[string]string{kueueconstants.PrebuiltWorkloadLabel: "trainjob-queued-1a2b3", kueue.MultiKueueOriginLabel: "manager"}
		remote.Spec.ManagedBy = nil
		copied := admitted(ctx, remote)
		Expect(mpiguardPatch(copied)).To(Equal(mpiguardPatch(queued)), "the manager's entry is the one mpiguard writes here too")

		// The worker's Kueue admits it by resuming it: judged and reserved
		// against the worker's quota.
		copied.Spec.Suspend = ptr.To(false)
		Expect(env.Client.Update(ctx, copied)).To(Succeed())
		Expect(env.ReservedJobs(ctx, worker)).To(Equal([]string{"queued"}))
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty())
	})

	It("is denied when it violates data residency, and only for that", func(ctx context.Context) {
		msg := denial(ctx, job("pinned-us").ManagedBy(kueue.MultiKueueControllerName).
			RuntimePatch(userPatch("node", nil, map[string]string{"topology.kubernetes.io/region": "us-east-1"})).Obj())
		Expect(msg).To(ContainSubstring("[data-residency]"))
		Expect(msg).To(ContainSubstring("us-east-1"))
		Expect(msg).NotTo(ContainSubstring("[aggregate-quota]"))
	})

	It("is denied over the quota when it runs here (no spec.managedBy, or the Trainer's own)", func(ctx context.Context) {
		for _, b := range []*fixtures.TrainJobBuilder{job("local"), job("trainers").ManagedBy(trainjobutil.TrainJobControllerName)} {
			msg := denial(ctx, b.Obj())
			Expect(msg).To(ContainSubstring("[aggregate-quota]"))
			Expect(msg).To(ContainSubstring(`TrainJob needs 8 nvidia.com/gpu (launcher 0 + 2 workers x 4) but ResourceQuota "team-a" has 4 of 4 free`))
		}
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty())
	})
})
