package runtimes

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// Pending until the TrainJob policies enforce runtime constraints (policies/,
// owned by the policy engineer, fed by runtimes/constraints): remove the P from
// PIt then. The messages checked are the ones constraints.Check produces.
var _ = Describe("Runtime constraints on TrainJobs", func() {
	PIt("denies a TrainJob that exceeds its runtime's max-workers or runs outside its allowed namespaces", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := &trainer.ClusterTrainingRuntime{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "limited-", Annotations: map[string]string{
				constraints.AnnotationMaxWorkers:        "2",
				constraints.AnnotationAllowedNamespaces: ns,
			}},
			Spec: curatedSpec("mpiguard-openmpi-v2"),
		}
		Expect(env.Client.Create(ctx, rt)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, rt)).To(Succeed()) })

		job := func(ns, name string, workers int32) *trainer.TrainJob {
			return &trainer.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: trainer.TrainJobSpec{
					RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
					Trainer:    &trainer.Trainer{NumNodes: ptr.To(workers), Args: []string{"python", "train.py"}},
				},
			}
		}
		Expect(env.Client.Create(ctx, job(ns, "fits", 2))).To(Succeed())

		err := env.Client.Create(ctx, job(ns, "too-many", 3))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.trainer.numNodes"), ContainSubstring("at most 2"), ContainSubstring(constraints.AnnotationMaxWorkers)))

		other := env.Namespace(ctx, nil)
		err = env.Client.Create(ctx, job(other, "elsewhere", 1))
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring(other), ContainSubstring(constraints.AnnotationAllowedNamespaces)))
	})
})
