package framework

import (
	"context"
	"path/filepath"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// VolcanoCRDs is the folder of Volcano's Queue and PodGroup CRDs, for
// Options.ExtraCRDDirs. volcano.sh/apis ships no CRD files: `make manifests`
// generates these from its pinned types (go.mod) with the pinned
// controller-gen, as Volcano's own Makefile generates the CRDs it installs.
func VolcanoCRDs() string {
	return filepath.Join(RepoRoot(), "test", "framework", "crds", "volcano")
}

// CreateVolcanoQueue creates a Volcano Queue for one spec (deleted
// afterwards) and sets its status as Volcano's queue controller and
// scheduler would (envtest runs neither): the state and what is allocated.
// It returns once every running replica's cache shows that status.
func (e *Env) CreateVolcanoQueue(ctx context.Context, q *volcanov1beta1.Queue) *volcanov1beta1.Queue {
	ginkgo.GinkgoHelper()
	status := q.Status
	gomega.Expect(e.Client.Create(ctx, q)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(client.IgnoreNotFound(e.Client.Delete(ctx, q))).To(gomega.Succeed())
	})
	e.SetVolcanoQueueStatus(ctx, q, status)
	return q
}

// SetVolcanoQueueStatus writes q's status and waits for every running
// replica's cache to show it.
func (e *Env) SetVolcanoQueueStatus(ctx context.Context, q *volcanov1beta1.Queue, status volcanov1beta1.QueueStatus) {
	ginkgo.GinkgoHelper()
	q.Status = status
	gomega.Expect(e.Client.Status().Update(ctx, q)).To(gomega.Succeed())
	e.waitForQueue(ctx, q)
}

// UpdateVolcanoQueue writes q's spec and waits for every running replica's
// cache to show it.
func (e *Env) UpdateVolcanoQueue(ctx context.Context, q *volcanov1beta1.Queue) {
	ginkgo.GinkgoHelper()
	gomega.Expect(e.Client.Update(ctx, q)).To(gomega.Succeed())
	e.waitForQueue(ctx, q)
}

func (e *Env) waitForQueue(ctx context.Context, q *volcanov1beta1.Queue) {
	ginkgo.GinkgoHelper()
	e.eachReplicaCache(ctx, "Queue "+q.Name, func(g gomega.Gomega, cache client.Reader) {
		var cached volcanov1beta1.Queue
		g.Expect(cache.Get(ctx, client.ObjectKeyFromObject(q), &cached)).To(gomega.Succeed())
		g.Expect(cached.ResourceVersion).To(gomega.Equal(q.ResourceVersion))
	})
}
