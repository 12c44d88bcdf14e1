package admission

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// Gang-scheduled runtimes through the apiserver, with Volcano's Queue CRD
// (test/framework/crds/volcano, generated from the pinned volcano.sh/apis)
// and a Queue per spec whose status is set as Volcano would.
var _ = Describe("gang-scheduling through the apiserver", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = env.Namespace(ctx, nil) })

	// A Volcano runtime whose Workers have 4 GPUs each, in queue "q-<ns>":
	// numNodes 3 is 3 Workers and the launcher, 12 GPUs, 4 pods.
	volcanoJob := func(ctx context.Context, name, queue string) *trainer.TrainJob {
		rt := createRuntime(ctx, fixtures.VolcanoRuntime("volcano-"+ns, "4", queue))
		return fixtures.TrainJob(ns, name, rt.Name).NumNodes(3).NumProcPerNode(4).Obj()
	}

	It("denies a gang over its queue's capability, naming the queue and the numbers", func(ctx context.Context) {
		q := env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue("q-"+ns, volcanov1beta1.QueueStateOpen, "8", "0"))
		msg := denial(ctx, volcanoJob(ctx, "too-big", q.Name))
		Expect(msg).To(ContainSubstring(`[gang-scheduling] spec.trainer: the job's gang needs 12 nvidia.com/gpu (all 4 pods start together or none does) but Volcano queue %q can hold at most 8 (spec.capability)`, q.Name))
	})

	It("denies a job whose queue is Closed", func(ctx context.Context) {
		q := env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue("q-"+ns, volcanov1beta1.QueueStateClosed, "16", "0"))
		msg := denial(ctx, volcanoJob(ctx, "closed", q.Name))
		Expect(msg).To(ContainSubstring(`Volcano queue %q (annotation scheduling.volcano.sh/queue-name), whose state is "Closed"`, q.Name))
	})

	It("denies a job whose queue does not exist", func(ctx context.Context) {
		msg := denial(ctx, volcanoJob(ctx, "nowhere", "missing-"+ns))
		Expect(msg).To(ContainSubstring(`Volcano queue "missing-%s" (annotation scheduling.volcano.sh/queue-name) but no Queue of that name exists`, ns))
	})

	It("admits a gang that fits its queue but not what is allocated now, with a warning", func(ctx context.Context) {
		q := env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue("q-"+ns, volcanov1beta1.QueueStateOpen, "16", "8"))
		w := &warningsSeen{}
		Expect(clientWithWarnings(w).Create(ctx, volcanoJob(ctx, "waits", q.Name))).To(Succeed())
		Expect(w.list).To(ContainElement(ContainSubstring(`[gang-scheduling] spec.trainer: Volcano queue %q has 8 of 16 nvidia.com/gpu allocated to running jobs now and the job's gang needs 12`, q.Name)))
	})

	It("admits a gang that fits what its queue has free, without a warning", func(ctx context.Context) {
		q := env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue("q-"+ns, volcanov1beta1.QueueStateOpen, "16", "4"))
		w := &warningsSeen{}
		Expect(clientWithWarnings(w).Create(ctx, volcanoJob(ctx, "fits", q.Name))).To(Succeed())
		Expect(w.list).NotTo(ContainElement(ContainSubstring("gang-scheduling")))
	})

	It("leaves a runtime without podGroupPolicy alone, whatever its queue annotation names", func(ctx context.Context) {
		rt := gpuWorkers("plain-"+ns, "4").Cluster()
		rt.Spec.Template.Annotations = map[string]string{volcanov1beta1.QueueNameAnnotationKey: "missing-" + ns}
		env.CreateClusterRuntime(ctx, rt)
		w := &warningsSeen{}
		Expect(clientWithWarnings(w).Create(ctx, fixtures.TrainJob(ns, "plain", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())).To(Succeed())
		Expect(w.list).NotTo(ContainElement(ContainSubstring("gang-scheduling")))
	})

	Describe("coscheduling", func() {
		It("denies a gang larger than a quota's free room (aggregate-quota)", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.CoschedulingRuntime("cosched-"+ns, "4", 120))
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "8"))
			msg := denial(ctx, fixtures.TrainJob(ns, "gang", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())
			Expect(msg).To(ContainSubstring(`[aggregate-quota] spec.trainer: TrainJob needs 12 nvidia.com/gpu`))
			Expect(msg).To(ContainSubstring(`ResourceQuota "team-a" has 8 of 16 free`))
		})

		It("warns about a scheduleTimeoutSeconds of 0", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.CoschedulingRuntime("cosched-zero-"+ns, "4", 0))
			w := &warningsSeen{}
			Expect(clientWithWarnings(w).Create(ctx, fixtures.TrainJob(ns, "gang", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())).To(Succeed())
			Expect(w.list).To(ContainElement(ContainSubstring(`[gang-scheduling] spec.runtimeRef: runtime %s gang-schedules with coscheduling and its PodGroup's scheduleTimeoutSeconds is 0`, rt.Name)))
		})
	})
})
