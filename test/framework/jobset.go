package framework

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// JobSetController is StartJobSetController for one Ginkgo spec: it stops
// when the spec ends.
func (e *Env) JobSetController(ctx context.Context, namespaces ...string) {
	ginkgo.GinkgoHelper()
	stop, err := e.StartJobSetController(ctx, namespaces...)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ginkgo.DeferCleanup(func() { gomega.Expect(stop()).To(gomega.Succeed()) })
}
