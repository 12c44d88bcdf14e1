package runtimes

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// curatedSpec returns the spec of a curated runtime as the binary has it.
func curatedSpec(name string) trainer.TrainingRuntimeSpec {
	all, err := catalog.Load()
	Expect(err).NotTo(HaveOccurred())
	for _, rt := range all {
		if rt.Name == name {
			return *rt.Spec.DeepCopy()
		}
	}
	Fail("no curated runtime " + name)
	return trainer.TrainingRuntimeSpec{}
}

var _ = Describe("Runtime template webhook", func() {
	It("admits every curated runtime without a warning, and each renders to 1 launcher that is also a node, numNodes-1 Workers and the requested Slots per worker", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		c, w := warningClient()
		renderer, err := render.NewRenderer(ctx)
		Expect(err).NotTo(HaveOccurred())
		all, err := catalog.Load()
		Expect(err).NotTo(HaveOccurred())
		for _, want := range all {
			By(want.Name)
			// A namespaced copy goes through the webhook now, with this client's warnings.
			namespaced := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: want.Name, Labels: want.Labels}, Spec: want.Spec}
			Expect(c.Create(ctx, namespaced)).To(Succeed())
			Expect(w.take()).To(BeEmpty(), "admission warnings for %s", want.Name)

			// Render the published ClusterTrainingRuntime as the apiserver stores it.
			var published trainer.ClusterTrainingRuntime
			Eventually(func() error { return env.Client.Get(ctx, client.ObjectKey{Name: want.Name}, &published) }, timeout, interval).Should(Succeed())
			job := &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "render"},
				Spec: trainer.TrainJobSpec{
					RuntimeRef: trainer.RuntimeRef{Name: want.Name, APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind)},
					Trainer:    &trainer.Trainer{NumNodes: ptr.To[int32](3), NumProcPerNode: ptr.To[int32](2)},
				},
			}
			view, err := renderer.Render(ctx, render.Input{TrainJob: job, Runtime: &published})
			Expect(err).NotTo(HaveOccurred())
			Expect(view.Problems).To(BeEmpty())
			Expect(view.Launcher).NotTo(BeNil())
			Expect(view.RunLauncherAsNode).To(BeTrue(), "the launcher runs as a node, so resourcesPerNode reaches the Workers")
			Expect(view.Launcher.Pods).To(BeEquivalentTo(1), "launcher pods")
			Expect(view.Workers.Pods).To(BeEquivalentTo(2), "Worker pods: the launcher is one of the 3 nodes")
			Expect(view.SlotsPerWorker).To(BeEquivalentTo(2), "Slots per worker")
			Expect(view.Hostfile).To(Equal([]string{
				"render-node-0-0.render slots=2",
				"render-node-0-1.render slots=2",
				"render-launcher-0-0.render slots=2",
			}), "hostfile: both Workers, then the launcher")
		}
	})

	type deny struct {
		mutate  func(*trainer.TrainingRuntimeSpec)
		message string
	}
	DescribeTable("denies a ClusterTrainingRuntime that the Trainer would accept but that cannot run MPI",
		func(ctx context.Context, d deny) {
			spec := curatedSpec("mpiguard-openmpi-v2")
			d.mutate(&spec)
			rt := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: spec}
			err := env.Client.Create(ctx, rt)
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).To(ContainSubstring(`admission webhook "vclustertrainingruntime.mpiguard.io" denied the request`))
			Expect(err.Error()).To(ContainSubstring(d.message))
		},
		Entry("launcher container not named node", deny{
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.Containers[0].Name = "mpi"
			},
			message: `the launcher job has no container named "node"`,
		}),
		Entry("ancestor label on both jobs", deny{
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[0].Template.Labels = s.Template.Spec.ReplicatedJobs[1].Template.Labels
			},
			message: "both the launcher and the node job carry the trainer ancestor label",
		}),
		Entry("numNodes 2 with an ancestor-labelled launcher", deny{
			mutate:  func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.NumNodes = ptr.To[int32](2) },
			message: "it would start 2 launchers instead of 1",
		}),
		Entry("replicas 2", deny{
			mutate:  func(s *trainer.TrainingRuntimeSpec) { s.Template.Spec.ReplicatedJobs[0].Replicas = 2 },
			message: "spec.template.spec.replicatedJobs[0].replicas: Invalid value: 2: must be 1",
		}),
		Entry("volcano PodGroup with the default scheduler", deny{
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Volcano: &trainer.VolcanoPodGroupPolicySource{}}}
			},
			message: `pods go to scheduler "default-scheduler", which ignores it`,
		}),
		Entry("both PodGroup policies", deny{
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{
					Volcano: &trainer.VolcanoPodGroupPolicySource{}, Coscheduling: &trainer.CoschedulingPodGroupPolicySource{}}}
			},
			message: "sets both coscheduling and volcano",
		}),
		Entry("pod activeDeadlineSeconds", deny{
			mutate: func(s *trainer.TrainingRuntimeSpec) {
				s.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
			},
			message: "is 600s on the pod template",
		}),
	)

	It("warns, but admits, a runtime without the Istio opt-out", func(ctx context.Context) {
		c, w := warningClient()
		spec := curatedSpec("mpiguard-mpich-v1")
		spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Labels = nil
		rt := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{GenerateName: "no-istio-"}, Spec: spec}
		Expect(c.Create(ctx, rt)).To(Succeed())
		Expect(w.take()).To(ConsistOf(
			ContainSubstring(`the "node" pods have no Istio sidecar opt-out`),
			ContainSubstring(`the "node" pods have no Istio ambient opt-out`),
		))
		Expect(c.Delete(ctx, rt)).To(Succeed())
	})

	It("checks TrainingRuntime updates, which the Trainer's own webhook lets through", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-mpi"}, Spec: curatedSpec("mpiguard-openmpi-v2")}
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		rt.Spec.Template.Spec.ReplicatedJobs[1].Replicas = 3
		err := env.Client.Update(ctx, rt)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`TrainingRuntime "team-mpi" is not a usable MPI runtime`))
		Expect(err.Error()).To(ContainSubstring("3 copies of the \"launcher\" job"))

		By("a metadata-only update of the stored runtime still passes")
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), rt)).To(Succeed())
		rt.Labels = map[string]string{"team": "a"}
		Expect(env.Client.Update(ctx, rt)).To(Succeed())
	})

	It("denies malformed constraint annotations with the expected format", func(ctx context.Context) {
		rt := &trainer.ClusterTrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "constrained-", Annotations: map[string]string{
				constraints.AnnotationMaxWorkers:        "eight",
				constraints.AnnotationAllowedNamespaces: "team-a,ml-*",
			}},
			Spec: curatedSpec("mpiguard-openmpi-v2"),
		}
		err := env.Client.Create(ctx, rt)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf(`metadata.annotations[%s]: Invalid value: "eight": must be a whole number of hostfile nodes (spec.trainer.numNodes: every Worker, and the Launcher when it runs as a node), at least 1 (e.g. "8")`, constraints.AnnotationMaxWorkers)))

		rt.Annotations[constraints.AnnotationMaxWorkers] = "8"
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		Expect(env.Client.Delete(ctx, rt)).To(Succeed())
	})
})
