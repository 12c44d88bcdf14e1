package framework

import (
	"context"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RunQuotaController runs kube-controller-manager's resourcequota controller
// (the real binary, from the control plane's assets) until the current spec
// ends: ResourceQuotas' status.hard and status.used are then the
// controller's, computed from the pods that exist, as in a cluster, and
// lowered when pods finish or go (the apiserver's own quota admission only
// ever charges). Create quotas with CreateSyncedQuota then.
//
// Per spec, not a suite option (Options.KubeControllers): while it runs, the
// controller recomputes every quota of every namespace, which would undo the
// status.used other specs set by hand (CreateQuota) to stand for pods that
// do not exist.
func (e *Env) RunQuotaController(ctx context.Context) {
	ginkgo.GinkgoHelper()
	stop, err := e.StartQuotaController(ctx)
	if stop != nil {
		ginkgo.DeferCleanup(func() {
			gomega.Expect(stop()).To(gomega.Succeed(), "the resourcequota controller died during the spec")
		})
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

// CreateSyncedQuota creates q with no status and returns once the quota
// controller (RunQuotaController) has written it, hard as in spec and used
// counted for every name, and every running replica's cache shows it.
func (e *Env) CreateSyncedQuota(ctx context.Context, q *corev1.ResourceQuota) {
	ginkgo.GinkgoHelper()
	gomega.Expect(e.Client.Create(ctx, q)).To(gomega.Succeed())
	gomega.Eventually(func(g gomega.Gomega) {
		g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(q), q)).To(gomega.Succeed())
		g.Expect(equality.Semantic.DeepEqual(q.Status.Hard, q.Spec.Hard)).To(gomega.BeTrue(), "status.hard %v, spec.hard %v", q.Status.Hard, q.Spec.Hard)
		g.Expect(q.Status.Used).To(gomega.HaveLen(len(q.Spec.Hard)))
	}).Should(gomega.Succeed(), "the quota controller never synced ResourceQuota %s/%s", q.Namespace, q.Name)
	e.waitReplicasSeeQuotaStatus(ctx, q, len(q.Spec.Hard))
}

// EventuallyUsed waits until the quota controller's status.used of quota
// ns/name shows amount of resource.
func (e *Env) EventuallyUsed(ctx context.Context, ns, name string, resource corev1.ResourceName, amount string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func(g gomega.Gomega) string {
		var q corev1.ResourceQuota
		g.Expect(e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &q)).To(gomega.Succeed())
		used := q.Status.Used[resource]
		return used.String()
	}).Should(gomega.Equal(amount), "status.used[%s] of ResourceQuota %s/%s", resource, ns, name)
}

// CreateChargedPod creates a pod in ns whose one container requests and is
// limited to resources (extended resources such as nvidia.com/gpu need
// both), labelled labels: what the quota charges for it. Nothing schedules
// it; FinishPod ends it.
func (e *Env) CreateChargedPod(ctx context.Context, ns, name string, labels map[string]string, resources corev1.ResourceList) *corev1.Pod {
	ginkgo.GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: resources, Limits: resources}}}},
	}
	gomega.Expect(e.Client.Create(ctx, pod)).To(gomega.Succeed())
	return pod
}
