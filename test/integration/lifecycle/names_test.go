package lifecycle

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("a create under the name of a job that lives", func() {
	It("leaves the live job's quota held: a job that does not fit next to it is still refused", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		rt := gpuRuntime(ctx, "names-"+ns, "8")
		first := admitted(ctx, gpuJob(ns, "a", rt.Name, 2, 8).Obj())
		Expect(entryOf(ctx, first)).NotTo(BeNil())
		Expect(denial(ctx, gpuJob(ns, "small", rt.Name, 1, 8).Obj())).To(ContainSubstring("[aggregate-quota]"))

		By("kubectl create of a second a: refused (by mpiguard or as AlreadyExists)")
		Expect(env.Client.Create(ctx, gpuJob(ns, "a", rt.Name, 2, 8).Obj())).NotTo(Succeed())
		Expect(entryOf(ctx, first)).NotTo(BeNil(), "the live job's entry was replaced")

		Expect(denial(ctx, gpuJob(ns, "small", rt.Name, 1, 8).Obj())).To(ContainSubstring("[aggregate-quota]"),
			"the live job's quota was given away by a create of its name")
	})
})
