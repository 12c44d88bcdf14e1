package framework

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
)

// CreateClusterRuntime creates a ClusterTrainingRuntime for one spec and
// deletes it afterwards.
func (e *Env) CreateClusterRuntime(ctx context.Context, rt *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime {
	ginkgo.GinkgoHelper()
	gomega.Expect(e.Client.Create(ctx, rt)).To(gomega.Succeed())
	ginkgo.DeferCleanup(func(ctx context.Context) {
		gomega.Expect(client.IgnoreNotFound(e.Client.Delete(ctx, rt))).To(gomega.Succeed())
	})
	return rt
}

// CreateQuota creates a ResourceQuota and sets its status as the quota
// controller would (envtest runs no controller-manager): hard as in spec, used
// as given, and zero for every other name the quota limits (the controller
// counts each). It returns once every running replica's cache shows the
// status: each replica learns from its cache which quotas a namespace has.
func (e *Env) CreateQuota(ctx context.Context, q *corev1.ResourceQuota, used corev1.ResourceList) {
	ginkgo.GinkgoHelper()
	gomega.Expect(e.Client.Create(ctx, q)).To(gomega.Succeed())
	used = used.DeepCopy()
	if used == nil {
		used = corev1.ResourceList{}
	}
	for name := range q.Spec.Hard {
		if _, ok := used[name]; !ok {
			used[name] = resource.MustParse("0")
		}
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
	gomega.Expect(e.Client.Status().Update(ctx, q)).To(gomega.Succeed())
	e.waitReplicasSeeQuotaStatus(ctx, q, len(used))
}

// waitReplicasSeeQuotaStatus returns once every running replica's cache
// shows q's status: used names names.
func (e *Env) waitReplicasSeeQuotaStatus(ctx context.Context, q *corev1.ResourceQuota, names int) {
	ginkgo.GinkgoHelper()
	e.eachReplicaCache(ctx, "the status of ResourceQuota "+q.Name, func(g gomega.Gomega, cache client.Reader) {
		var cached corev1.ResourceQuota
		g.Expect(cache.Get(ctx, client.ObjectKeyFromObject(q), &cached)).To(gomega.Succeed())
		g.Expect(cached.Status.Used).To(gomega.HaveLen(names))
	})
}

// ReservedJobs lists the TrainJobs whose quota the QuotaReservation of
// namespace ns holds (none when it has no QuotaReservation).
func (e *Env) ReservedJobs(ctx context.Context, ns string) []string {
	ginkgo.GinkgoHelper()
	res := e.Reservation(ctx, ns)
	if res == nil {
		return nil
	}
	var out []string
	for _, entry := range res.Spec.Entries {
		out = append(out, entry.TrainJob)
	}
	return out
}

// Reservation reads the QuotaReservation of namespace ns (nil when none).
func (e *Env) Reservation(ctx context.Context, ns string) *quotav1alpha1.QuotaReservation {
	ginkgo.GinkgoHelper()
	res := &quotav1alpha1.QuotaReservation{}
	err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.PolicyNamespace, Name: ns}, res)
	if apierrors.IsNotFound(err) {
		return nil
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return res
}
