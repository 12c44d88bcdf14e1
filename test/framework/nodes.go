package framework

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeOf is a Node named name with labels, taints and allocatable (plus
// 110 pods), as a kubelet would report it. envtest runs no kubelet: a Node
// is an API object only, which is all mpiguard reads of it.
func NodeOf(name string, labels map[string]string, allocatable corev1.ResourceList, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	for k, v := range labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = taints
	n.Status.Allocatable = allocatable.DeepCopy()
	if _, ok := n.Status.Allocatable[corev1.ResourcePods]; !ok {
		n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
	}
	return n
}

// CreateNode creates node with its status (allocatable) for one spec,
// deleted afterwards. It returns once every running replica's cache shows
// it, and the cleanup once none does: Nodes are cluster-wide, and a spec
// after this one must be judged without them.
func (e *Env) CreateNode(ctx context.Context, node *corev1.Node) *corev1.Node {
	ginkgo.GinkgoHelper()
	status := node.Status
	gomega.Expect(e.Client.Create(ctx, node)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(client.IgnoreNotFound(e.Client.Delete(ctx, node))).To(gomega.Succeed())
		e.waitForNode(ctx, node, false)
	})
	node.Status = status
	gomega.Expect(e.Client.Status().Update(ctx, node)).To(gomega.Succeed())
	e.waitForNode(ctx, node, true)
	return node
}

// waitForNode waits until every running replica's cache has node at its
// resource version (present) or has it no more.
func (e *Env) waitForNode(ctx context.Context, node *corev1.Node, present bool) {
	ginkgo.GinkgoHelper()
	e.eachReplicaCache(ctx, "Node "+node.Name, func(g gomega.Gomega, cache client.Reader) {
		var cached corev1.Node
		err := cache.Get(ctx, client.ObjectKeyFromObject(node), &cached)
		if !present {
			g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "Node %s still cached", node.Name)
			return
		}
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(cached.ResourceVersion).To(gomega.Equal(node.ResourceVersion))
	})
}

// eachReplicaCache returns once check passes on the cache of every running
// replica (what names the object waited for in the failure).
func (e *Env) eachReplicaCache(ctx context.Context, what string, check func(g gomega.Gomega, cache client.Reader)) {
	ginkgo.GinkgoHelper()
	for _, r := range e.Replicas {
		if !r.Running() {
			continue
		}
		gomega.Eventually(func(g gomega.Gomega) { check(g, r.Manager.GetClient()) }).WithContext(ctx).
			Should(gomega.Succeed(), "replica at %s never showed %s as expected", r.Addr, what)
	}
}
