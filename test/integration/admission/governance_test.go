package admission

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/runtimes/constraints"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// Runtime governance through the apiserver: the priority classes a runtime's
// jobs may use, its default, and how its gangs must be scheduled
// (runtime-constraints, runtimes/constraints/governance.go).
var _ = Describe("runtime governance", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = env.Namespace(ctx, nil) })

	priorities := func(b *fixtures.RuntimeBuilder) *fixtures.RuntimeBuilder {
		return b.Annotation(constraints.AnnotationAllowedPriorityClasses, "ml-low,ml-high").
			Annotation(constraints.AnnotationDefaultPriorityClass, "ml-low")
	}

	It("holds a job to the runtime's priority classes and gives one that names none the default", func(ctx context.Context) {
		rt := createRuntime(ctx, priorities(gpuWorkers("priorities-"+ns, "4")))
		admitted(ctx, fixtures.TrainJob(ns, "high", rt.Name).NumNodes(2).Label(constraints.PriorityClassLabel, "ml-high").Obj())

		msg := denial(ctx, fixtures.TrainJob(ns, "urgent", rt.Name).NumNodes(2).Label(constraints.PriorityClassLabel, "urgent").Obj())
		Expect(msg).To(ContainSubstring(`[runtime-constraints] metadata.labels[kueue.x-k8s.io/priority-class]: TrainJob asks for priority class "urgent"`))
		Expect(msg).To(ContainSubstring(`allows only ml-low, ml-high`))
		Expect(msg).To(ContainSubstring(`(the runtime's default is "ml-low")`))

		// A job that names none gets the runtime's default; one that names one keeps it.
		unnamed := admitted(ctx, fixtures.TrainJob(ns, "unnamed", rt.Name).NumNodes(2).Label("team", "vision").Obj())
		Expect(unnamed.Labels).To(Equal(map[string]string{"team": "vision", constraints.PriorityClassLabel: "ml-low"}))
		bare := admitted(ctx, fixtures.TrainJob(ns, "bare", rt.Name).NumNodes(2).Obj())
		Expect(bare.Labels).To(HaveKeyWithValue(constraints.PriorityClassLabel, "ml-low"))
		high := &trainer.TrainJob{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "high"}, high)).To(Succeed())
		Expect(high.Labels).To(HaveKeyWithValue(constraints.PriorityClassLabel, "ml-high"))
	})

	It("requires a coscheduling gang's schedule timeout in the runtime's range", func(ctx context.Context) {
		inRange := createRuntime(ctx, fixtures.CoschedulingRuntime("timeout-ok-"+ns, "4", 120).
			Annotation(constraints.AnnotationGangScheduleTimeoutSeconds, "60-600"))
		admitted(ctx, fixtures.TrainJob(ns, "patient", inRange.Name).NumNodes(2).NumProcPerNode(4).Obj())

		tooLong := createRuntime(ctx, fixtures.CoschedulingRuntime("timeout-long-"+ns, "4", 1200).
			Annotation(constraints.AnnotationGangScheduleTimeoutSeconds, "60-600"))
		msg := denial(ctx, fixtures.TrainJob(ns, "waits-long", tooLong.Name).NumNodes(2).NumProcPerNode(4).Obj())
		Expect(msg).To(ContainSubstring(`[runtime-constraints] spec.runtimeRef.name: runtime %s gives its coscheduling gang a schedule timeout of 1200 seconds but requires 60 to 600 seconds`, tooLong.Name))
	})

	It("requires a gang of every pod", func(ctx context.Context) {
		gang := createRuntime(ctx, fixtures.CoschedulingRuntime("gang-all-"+ns, "4", 120).
			Annotation(constraints.AnnotationGangMinAvailable, "all"))
		admitted(ctx, fixtures.TrainJob(ns, "together", gang.Name).NumNodes(2).NumProcPerNode(4).Obj())

		noGang := createRuntime(ctx, gpuWorkers("no-gang-"+ns, "4").Annotation(constraints.AnnotationGangMinAvailable, "all"))
		msg := denial(ctx, fixtures.TrainJob(ns, "one-by-one", noGang.Name).NumNodes(2).NumProcPerNode(4).Obj())
		Expect(msg).To(ContainSubstring(`[runtime-constraints] spec.runtimeRef.name: runtime %s requires its jobs to be gang-scheduled`, noGang.Name))
	})

	It("refuses a runtime whose default priority class it does not allow", func(ctx context.Context) {
		rt := gpuWorkers("bad-default-"+ns, "4").Annotation(constraints.AnnotationAllowedPriorityClasses, "ml-high").
			Annotation(constraints.AnnotationDefaultPriorityClass, "ml-low").Cluster()
		err := env.Client.Create(ctx, rt)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`mpiguard.io/default-priority-class`))
		Expect(err.Error()).To(ContainSubstring(`the default must be allowed`))
	})
})
