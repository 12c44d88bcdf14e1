package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
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
		var namespace corev1.Namespace
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &namespace)).To(Succeed())
		namespace.Labels["mpiguard.io/data-residency"] = "eu"
		Expect(env.Client.Update(ctx, &namespace)).To(Succeed())
		Eventually(func(g Gomega) {
			var cached corev1.Namespace
			g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKey{Name: ns}, &cached)).To(Succeed())
			g.Expect(cached.Labels).To(HaveKey("mpiguard.io/data-residency"))
		}).Should(Succeed())

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
})
