package admission

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// A controller compiled against an older TrainJob type writes whole objects
// without the fields its type lacks: every Kueue the module proxy serves
// targets Trainer v2.0/v2.1, whose TrainJob has neither spec.runtimePatches
// nor spec.activeDeadlineSeconds. Its updates must not erase what mpiguard
// decided when the job was admitted.
var _ = Describe("updates written by a client of an older TrainJob type", func() {
	It("keep mpiguard's runtime patch entry and the deadline, while the job stays suspended and when it is resumed", func(ctx context.Context) {
		ns := env.Namespace(ctx, map[string]string{"mpiguard.io/data-residency": "eu"})
		rt := createRuntime(ctx, fixtures.MPIRuntime("older-client-"+ns))
		stored := admitted(ctx, fixtures.TrainJob(ns, "queued", rt.Name).NumNodes(1).Suspend(true).Obj())
		own := mpiguardPatch(stored)
		Expect(own).NotTo(BeNil())
		Expect(podTemplatePatch(own, "node").Metadata.Labels).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
		Expect(podTemplatePatch(own, "node").Spec.Affinity).NotTo(BeNil(), "the eu zone restricts the Workers")
		deadline := stored.Spec.ActiveDeadlineSeconds
		Expect(deadline).To(BeNumerically(">", 0))

		// As Kueue does after suspending a job and when it admits one: the
		// object read, written back without the fields its type lacks.
		for _, step := range []struct {
			what    string
			suspend bool
		}{{"an update of the suspended job", true}, {"the resume", false}} {
			By(step.what)
			Expect(writeAsOlderClient(ctx, stored, func(u *unstructured.Unstructured) {
				unstructured.RemoveNestedField(u.Object, "spec", "runtimePatches")
				unstructured.RemoveNestedField(u.Object, "spec", "activeDeadlineSeconds")
				Expect(unstructured.SetNestedField(u.Object, step.suspend, "spec", "suspend")).To(Succeed())
			})).To(Succeed())
			after := &trainer.TrainJob{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(stored), after)).To(Succeed())
			Expect(after.Spec.Suspend).To(HaveValue(Equal(step.suspend)))
			Expect(after.Spec.ActiveDeadlineSeconds).To(Equal(deadline), "the deadline was erased")
			Expect(after.Spec.RuntimePatches).To(HaveLen(1))
			Expect(after.Spec.RuntimePatches[0].Manager).To(Equal("mpiguard.io/admission"))
			Expect(after.Spec.RuntimePatches[0].TrainingRuntimeSpec).To(Equal(own.TrainingRuntimeSpec), "mpiguard's entry was erased or changed")
		}
	})

	It("cannot resume a job whose stored deadline is above a ceiling lowered since", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("lowered-ceiling-"+ns))
		stored := admitted(ctx, fixtures.TrainJob(ns, "long", rt.Name).NumNodes(1).Suspend(true).ActiveDeadlineSeconds(7200).Obj())
		setNamespaceAnnotation(ctx, ns, "mpiguard.io/max-duration-hours", "1")
		err := writeAsOlderClient(ctx, stored, func(u *unstructured.Unstructured) {
			unstructured.RemoveNestedField(u.Object, "spec", "activeDeadlineSeconds") // restored, then judged
			Expect(unstructured.SetNestedField(u.Object, false, "spec", "suspend")).To(Succeed())
		})
		Expect(err).To(HaveOccurred(), "the resume was allowed")
		Expect(err.Error()).To(ContainSubstring(`[max-duration] spec.activeDeadlineSeconds: TrainJob may run for 2 hours from its resume (spec.activeDeadlineSeconds 7200) but namespace "` + ns + `" (annotation mpiguard.io/max-duration-hours) allows at most 1 hour`))
	})
})

// writeAsOlderClient reads job as an unstructured object, edits it and writes
// the whole object back (a PUT carrying the resourceVersion read), as a
// controller with an older compiled type does.
func writeAsOlderClient(ctx context.Context, job *trainer.TrainJob, edit func(*unstructured.Unstructured)) error {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.TrainJobKind))
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), u)).To(Succeed())
	edit(u)
	return env.Client.Update(ctx, u)
}

// setNamespaceAnnotation annotates namespace ns, as an admin does, and waits
// until mpiguard's cache sees it.
func setNamespaceAnnotation(ctx context.Context, ns, key, value string) {
	GinkgoHelper()
	var namespace corev1.Namespace
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &namespace)).To(Succeed())
	if namespace.Annotations == nil {
		namespace.Annotations = map[string]string{}
	}
	namespace.Annotations[key] = value
	Expect(env.Client.Update(ctx, &namespace)).To(Succeed())
	Eventually(func(g Gomega) {
		var cached corev1.Namespace
		g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKey{Name: ns}, &cached)).To(Succeed())
		g.Expect(cached.Annotations).To(HaveKeyWithValue(key, value))
	}).Should(Succeed())
}
