package admission

import (
	"context"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("updates of admitted TrainJobs", func() {
	It("never block metadata-only updates, even when a policy tightened since admission; spec changes are evaluated", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("update-"+ns))
		job := admitted(ctx, fixtures.TrainJob(ns, "running", rt.Name).NumNodes(1).Suspend(true).Obj())

		// The namespace is bound to the eu zone after the job was admitted.
		bindToEU(ctx, ns)

		// Labels and finalizers: allowed (the Trainer must always be able to remove its finalizer).
		job.Labels = map[string]string{"team": "vision"}
		job.Finalizers = append(job.Finalizers, "example.com/cleanup")
		Expect(env.Client.Update(ctx, job)).To(Succeed())

		// Resuming changes what runs: evaluated, and the job is not restricted to eu.
		job.Spec.Suspend = ptr.To(false)
		err := env.Client.Update(ctx, job)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("[data-residency]"))

		// Removing the finalizer again is still possible.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		job.Finalizers = nil
		Expect(env.Client.Update(ctx, job)).To(Succeed())
	})

	It("always allow suspending a running job, even when it now breaks a tightened policy; other spec changes are evaluated", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("suspend-"+ns))
		job := admitted(ctx, fixtures.TrainJob(ns, "running", rt.Name).NumNodes(1).Suspend(false).Obj())

		// The namespace is bound to the eu zone after the job was admitted:
		// the running job now breaks data-residency.
		bindToEU(ctx, ns)

		// An unrelated spec change (another tool's runtime patch: most of a
		// running TrainJob's spec is immutable) is evaluated, and denied.
		changed := job.DeepCopy()
		changed.Spec.RuntimePatches = append(changed.Spec.RuntimePatches, trainer.RuntimePatch{Manager: "example.com/tuner"})
		err := env.Client.Update(ctx, changed)
		Expect(err).To(HaveOccurred(), "an unrelated spec change of a job that breaks data-residency was allowed")
		Expect(err.Error()).To(ContainSubstring("[data-residency]"))

		// Suspending and changing something else at once: evaluated like any change.
		both := changed.DeepCopy()
		both.Spec.Suspend = ptr.To(true)
		err = env.Client.Update(ctx, both)
		Expect(err).To(HaveOccurred(), "suspending together with another spec change skipped evaluation")
		Expect(err.Error()).To(ContainSubstring("[data-residency]"))

		// Suspending alone, as Kueue preempts (a merge patch of spec.suspend): allowed.
		Expect(env.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
		Expect(job.Spec.Suspend).To(HaveValue(BeTrue()))

		// While it stays suspended it runs nothing: Kueue's next update (it
		// resets its own runtime patch after suspending) is allowed, with
		// what the resume will be told as a warning.
		w := &warningsSeen{}
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandlerWithContext = w
		recorder, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
		Expect(err).NotTo(HaveOccurred())
		Expect(recorder.Patch(ctx, job, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"runtimePatches":[{"manager":"kueue.x-k8s.io/manager"}]}}`)))).To(Succeed(),
			"an update of a job that stays suspended was refused")
		Expect(w.list).To(ContainElement(And(ContainSubstring("[data-residency]"), ContainSubstring("denied when the job is resumed"))))

		// Resuming starts pods again: evaluated, and denied.
		err = env.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))
		Expect(err).To(HaveOccurred(), "resuming a job that breaks data-residency was allowed")
		Expect(err.Error()).To(ContainSubstring("[data-residency]"))
	})
})

// warningsSeen collects the admission warnings the apiserver returns to a client.
type warningsSeen struct {
	mu   sync.Mutex
	list []string
}

func (w *warningsSeen) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// bindToEU labels namespace ns for the eu data-residency zone and waits until
// mpiguard's cache sees it.
func bindToEU(ctx context.Context, ns string) {
	GinkgoHelper()
	var namespace corev1.Namespace
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &namespace)).To(Succeed())
	namespace.Labels["mpiguard.io/data-residency"] = "eu"
	Expect(env.Client.Update(ctx, &namespace)).To(Succeed())
	Eventually(func(g Gomega) {
		var cached corev1.Namespace
		g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKey{Name: ns}, &cached)).To(Succeed())
		g.Expect(cached.Labels).To(HaveKey("mpiguard.io/data-residency"))
	}).Should(Succeed())
}
