package admission

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("The manager's cache", func() {
	// Nothing in mpiguard reads managedFields from the cache, and they are a
	// large share of every object: the informers drop them.
	It("keeps objects without their managedFields", func(ctx context.Context) {
		ns, err := env.NewNamespace(ctx, nil)
		Expect(err).NotTo(HaveOccurred())
		var stored corev1.Namespace
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ns), &stored)).To(Succeed())
		Expect(stored.ManagedFields).NotTo(BeEmpty(), "the apiserver's copy has managedFields")
		Eventually(func(g Gomega) {
			var cached corev1.Namespace
			g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(ns), &cached)).To(Succeed())
			g.Expect(cached.UID).To(Equal(stored.UID))
			g.Expect(cached.ManagedFields).To(BeEmpty())
		}).Should(Succeed())
	})
})
