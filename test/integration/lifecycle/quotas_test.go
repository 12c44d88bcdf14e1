package lifecycle

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("quotas that change while admitted jobs wait for their pods", func() {
	It("count an admitted job in a GPU quota created after its admission", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "pods", "pods", "100"), fixtures.ResourceList("pods", "0"))
		rt := gpuRuntime(ctx, "later-"+ns, "8")
		first := admitted(ctx, gpuJob(ns, "first", rt.Name, 2, 8).Obj())
		Expect(entryOf(ctx, first)).NotTo(BeNil(), "a job in a namespace with a quota is held until its pods exist")

		By("a quota of 16 GPUs is created while the first job's pods do not exist")
		gpuQuota(ctx, ns, "16")
		msg := denial(ctx, gpuJob(ns, "second", rt.Name, 1, 8).Obj())
		Expect(msg).To(ContainSubstring("[aggregate-quota]"))
		Expect(msg).To(ContainSubstring(ns + "/first"))
	})

	It("refuse with retry while a quota's status is not synced", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := gpuRuntime(ctx, "unsynced-"+ns, "8")
		// Created as a user creates it: the quota controller (not running
		// here) would set its status within seconds.
		q := fixtures.ResourceQuota(ns, "gpus", gpu, "16")
		Expect(env.Client.Create(ctx, q)).To(Succeed())
		for _, r := range env.Replicas {
			Eventually(func() error {
				return r.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(q), &corev1.ResourceQuota{})
			}, timeout, interval).Should(Succeed(), "replica at %s never saw the quota", r.Addr)
		}
		msg := denial(ctx, gpuJob(ns, "early", rt.Name, 1, 8).Obj())
		Expect(msg).To(ContainSubstring(`ResourceQuota ` + ns + `/gpus is not synced yet`))
		Expect(msg).To(ContainSubstring("retry"))
	})
})
