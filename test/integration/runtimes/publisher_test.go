package runtimes

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/runtimes/publisher"
	"github.com/mpiguard/mpiguard/test/framework"
)

var _ = Describe("Curated runtimes publisher", func() {
	get := func(ctx context.Context, name string) func(Gomega) *trainer.ClusterTrainingRuntime {
		return func(g Gomega) *trainer.ClusterTrainingRuntime {
			var rt trainer.ClusterTrainingRuntime
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, &rt)).To(Succeed())
			return &rt
		}
	}

	It("publishes every curated runtime on start, owned by one field manager", func(ctx context.Context) {
		all, err := catalog.Load()
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) []string {
			var list trainer.ClusterTrainingRuntimeList
			g.Expect(env.Client.List(ctx, &list, client.MatchingLabels{catalog.LabelCurated: "true"})).To(Succeed())
			var names []string
			for _, rt := range list.Items {
				names = append(names, rt.Name)
			}
			return names
		}, timeout, interval).Should(ConsistOf(catalog.Names(all)))

		rt := get(ctx, "mpiguard-openmpi")(Default)
		Expect(rt.Annotations).To(HaveKeyWithValue(catalog.AnnotationAliasOf, "mpiguard-openmpi-v2"))
		Expect(get(ctx, "mpiguard-openmpi-v1")(Default).Labels).To(HaveKeyWithValue("trainer.kubeflow.org/support", "deprecated"))
		var managers []string
		for _, mf := range rt.ManagedFields {
			managers = append(managers, mf.Manager+"/"+string(mf.Operation))
		}
		Expect(managers).To(ContainElement(publisher.FieldOwner + "/Apply"))
	})

	It("resolves the stable alias for new TrainJobs, and the Trainer snapshots it for running ones", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		job := &trainer.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alias"},
			Spec: trainer.TrainJobSpec{
				RuntimeRef: trainer.RuntimeRef{Name: "mpiguard-openmpi"},
				Trainer:    &trainer.Trainer{NumNodes: ptr.To[int32](2), Args: []string{"python", "train.py"}},
			},
		}
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		var snapshot corev1.ConfigMap
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alias-runtime-snapshot"}, &snapshot)
		}, timeout, interval).Should(Succeed(), "the Trainer keeps the runtime it started with")
		var snap trainer.ClusterTrainingRuntime
		Expect(yaml.Unmarshal([]byte(snapshot.Data["runtime"]), &snap)).To(Succeed())
		Expect(snap.Annotations).To(HaveKeyWithValue(catalog.AnnotationAliasOf, "mpiguard-openmpi-v2"))
		Expect(snap.Spec).To(Equal(get(ctx, "mpiguard-openmpi-v2")(Default).Spec))
	})

	It("restores a deleted curated runtime, every time", func(ctx context.Context) {
		const name = "mpiguard-mpich-v1-volcano"
		repairs := func() float64 {
			return framework.Counter("mpiguard_runtime_publisher_repairs_total", map[string]string{"runtime": name, "cause": "deleted"})
		}
		before := repairs()
		for round := 1; round <= 2; round++ {
			old := get(ctx, name)
			Eventually(old, timeout, interval).ShouldNot(BeNil())
			uid := old(Default).UID
			Expect(env.Client.Delete(ctx, old(Default))).To(Succeed())
			Eventually(func(g Gomega) types.UID { return get(ctx, name)(g).UID }, timeout, interval).ShouldNot(Equal(uid), "round %d", round)
			Eventually(repairs, timeout, interval).Should(BeNumerically("==", before+float64(round)))
		}
		Eventually(eventNotes(ctx, "default", name), timeout, interval).Should(ContainElement(ContainSubstring("Restored: curated runtime " + name + " was deleted outside mpiguard")))
	})

	It("reverts an edit, including fields another manager added", func(ctx context.Context) {
		const name = "mpiguard-intelmpi-v1"
		for round := 1; round <= 2; round++ {
			// The publisher repairs with two writes (an update, then an apply), so an
			// edit read between them conflicts; retry it as kubectl edit would.
			Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
				rt := get(ctx, name)(Default)
				rt.Spec.MLPolicy.MPI.NumProcPerNode = ptr.To[int32](8)
				rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector = map[string]string{"edited-by": "someone"}
				return env.Client.Update(ctx, rt, client.FieldOwner("kubectl-edit"))
			})).To(Succeed(), "round %d", round)
			Eventually(func(g Gomega) {
				rt := get(ctx, name)(g)
				g.Expect(*rt.Spec.MLPolicy.MPI.NumProcPerNode).To(BeEquivalentTo(1))
				g.Expect(rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector).To(BeEmpty())
			}, timeout, interval).Should(Succeed(), "round %d", round)
		}
		Expect(framework.Counter("mpiguard_runtime_publisher_repairs_total", map[string]string{"runtime": name, "cause": "edited"})).To(BeNumerically(">=", 2))
	})
})
