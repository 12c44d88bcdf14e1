package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// Each embedded policy, allowed and denied, through the real apiserver: the
// apiserver calls the mutating and validating webhooks over TLS, mutations are
// read back from the stored TrainJob and denials from the apiserver's error.
var _ = Describe("policies through the apiserver", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = env.Namespace(ctx, nil) })

	Describe("aggregate-quota", func() {
		It("denies a job whose Workers' GPUs exceed what the quota has free, with the numbers", func(ctx context.Context) {
			rt := createRuntime(ctx, gpuWorkers("quota-gpu-"+ns, "4"))
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "12"))

			msg := denial(ctx, fixtures.TrainJob(ns, "too-big", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())
			Expect(msg).To(ContainSubstring(`[aggregate-quota]`))
			Expect(msg).To(ContainSubstring(`TrainJob needs 12 nvidia.com/gpu`))
			Expect(msg).To(ContainSubstring(`3 workers x 4`))
			Expect(msg).To(ContainSubstring(`ResourceQuota "team-a" has 4 of 16 free`))
			Expect(msg).To(ContainSubstring(`reduce workers to 1`))
		})

		It("admits a job that exactly fills the remaining quota", func(ctx context.Context) {
			rt := createRuntime(ctx, gpuWorkers("quota-fit-"+ns, "4"))
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "4"))
			admitted(ctx, fixtures.TrainJob(ns, "fits", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())
		})

		It("counts admitted TrainJobs whose pods do not exist yet", func(ctx context.Context) {
			rt := createRuntime(ctx, gpuWorkers("quota-pending-"+ns, "4"))
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), corev1.ResourceList{})
			admitted(ctx, fixtures.TrainJob(ns, "first", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())
			msg := denial(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
			Expect(msg).To(ContainSubstring(`has 4 of 16 free`))
		})

		It("checks a suspended job when it is resumed, not when it is created", func(ctx context.Context) {
			rt := createRuntime(ctx, gpuWorkers("quota-resume-"+ns, "4"))
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
			job := admitted(ctx, fixtures.TrainJob(ns, "queued", rt.Name).NumNodes(3).NumProcPerNode(4).Suspend(true).Obj())
			job.Spec.Suspend = new(bool)
			err := env.Client.Update(ctx, job)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(`TrainJob needs 12 nvidia.com/gpu`))
		})
	})

	Describe("slots-gpus", func() {
		It("denies Slots per worker that differ from GPUs per worker", func(ctx context.Context) {
			rt := createRuntime(ctx, gpuWorkers("slots-"+ns, "4"))
			msg := denial(ctx, fixtures.TrainJob(ns, "mismatch", rt.Name).NumNodes(2).NumProcPerNode(2).Obj())
			Expect(msg).To(ContainSubstring("[slots-gpus] spec.trainer.numProcPerNode: each worker gets 2 MPI slots but has 4 GPUs"))
			Expect(msg).To(ContainSubstring("set spec.trainer.numProcPerNode to 4"))
		})

		It("admits GPU-derived Slots per worker", func(ctx context.Context) {
			rt := createRuntime(ctx, gpuWorkers("slots-derived-"+ns, "4"))
			admitted(ctx, fixtures.TrainJob(ns, "derived", rt.Name).NumNodes(2).Obj())
		})

		It("denies user env that overrides the MPI plugin's reserved variables", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("slots-env-"+ns))
			msg := denial(ctx, fixtures.TrainJob(ns, "env", rt.Name).NumNodes(1).Env("OMPI_MCA_orte_default_hostfile", "/tmp/h").Obj())
			Expect(msg).To(ContainSubstring("OMPI_MCA_orte_default_hostfile"))
		})
	})

	Describe("max-duration", func() {
		It("sets the default deadline on create (visible on the stored TrainJob)", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("deadline-"+ns))
			stored := admitted(ctx, fixtures.TrainJob(ns, "defaulted", rt.Name).NumNodes(1).Obj())
			Expect(stored.Spec.ActiveDeadlineSeconds).To(Equal(int64(24 * 3600)))
		})

		It("denies a deadline above the ceiling, in hours", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("deadline-max-"+ns))
			msg := denial(ctx, fixtures.TrainJob(ns, "forever", rt.Name).NumNodes(1).ActiveDeadlineSeconds(30*24*3600).Obj())
			Expect(msg).To(ContainSubstring("[max-duration]"))
			Expect(msg).To(ContainSubstring("may run for 720 hours"))
			Expect(msg).To(ContainSubstring("at most 168 hours"))
		})
	})

	Describe("data-residency", func() {
		var euNS string
		BeforeEach(func(ctx context.Context) {
			euNS = env.Namespace(ctx, map[string]string{"mpiguard.io/data-residency": "eu"})
		})

		It("restricts Launcher and Workers to the zone's regions (visible on the stored TrainJob)", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("eu-"+euNS))
			stored := admitted(ctx, fixtures.TrainJob(euNS, "in-eu", rt.Name).NumNodes(2).Obj())
			for _, rj := range []string{"launcher", "node"} {
				p := podTemplatePatch(mpiguardPatch(stored), rj)
				Expect(p).NotTo(BeNil(), "no mpiguard patch for %s", rj)
				Expect(p.Spec).NotTo(BeNil())
				Expect(p.Spec.Affinity).NotTo(BeNil(), "%s has no node affinity", rj)
				terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				Expect(terms).NotTo(BeEmpty())
				Expect(terms[0].MatchExpressions).To(ContainElement(And(
					HaveField("Key", "topology.kubernetes.io/region"),
					HaveField("Values", ConsistOf("eu-west-1", "eu-central-1")),
				)))
			}
		})

		It("denies pods pinned to another region by a runtime patch", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("us-pin-"+euNS))
			job := fixtures.TrainJob(euNS, "pinned-us", rt.Name).NumNodes(2).
				RuntimePatch(userPatch("node", nil, map[string]string{"topology.kubernetes.io/region": "us-east-1"})).Obj()
			msg := denial(ctx, job)
			Expect(msg).To(ContainSubstring("[data-residency]"))
			Expect(msg).To(ContainSubstring(`zone "eu"`))
			Expect(msg).To(ContainSubstring("us-east-1"))
		})
	})

	Describe("istio-opt-out", func() {
		It("labels Launcher and Worker pod templates out of the mesh (visible on the stored TrainJob)", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("istio-"+ns))
			stored := admitted(ctx, fixtures.TrainJob(ns, "meshless", rt.Name).NumNodes(1).Obj())
			for _, rj := range []string{"launcher", "node"} {
				p := podTemplatePatch(mpiguardPatch(stored), rj)
				Expect(p).NotTo(BeNil())
				Expect(p.Metadata.Labels).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
				Expect(p.Metadata.Labels).To(HaveKeyWithValue("istio.io/dataplane-mode", "none"))
			}
		})

		It("is idempotent: updating a stored TrainJob changes nothing", func(ctx context.Context) {
			rt := createRuntime(ctx, fixtures.MPIRuntime("istio-idem-"+ns))
			stored := admitted(ctx, fixtures.TrainJob(ns, "idem", rt.Name).NumNodes(1).Obj())
			before := stored.DeepCopy()
			Expect(env.Client.Update(ctx, stored)).To(Succeed())
			Expect(stored.Generation).To(Equal(before.Generation), "a no-op update through the mutating webhook bumped the generation")
			Expect(stored.Spec.RuntimePatches).To(HaveLen(len(before.Spec.RuntimePatches)))
		})
	})

	It("leaves a non-MPI TrainJob untouched", func(ctx context.Context) {
		rt := createRuntime(ctx, fixtures.TorchRuntime("torch-untouched-"+ns))
		stored := admitted(ctx, fixtures.TrainJob(ns, "torch", rt.Name).NumNodes(2).Obj())
		Expect(stored.Spec.RuntimePatches).To(BeEmpty())
		Expect(stored.Spec.ActiveDeadlineSeconds).To(BeZero())
	})
})
