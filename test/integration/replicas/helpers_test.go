package replicas

import (
	"context"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/mpiguard/mpiguard/policies/quota/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The helpers below are the admission suite's (test/integration/admission),
// except that createQuota waits for every running replica's cache.

// createRuntime creates a ClusterTrainingRuntime for one spec and deletes it afterwards.
func createRuntime(ctx context.Context, b *fixtures.RuntimeBuilder) *trainer.ClusterTrainingRuntime {
	GinkgoHelper()
	rt := b.Cluster()
	Expect(env.Client.Create(ctx, rt)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rt))).To(Succeed()) })
	return rt
}

// gpuWorkers is an MPI runtime whose Workers (node job) each have gpus GPUs and 4 CPUs.
func gpuWorkers(name, gpus string) *fixtures.RuntimeBuilder {
	return fixtures.MPIRuntime(name).
		Resources("node", fixtures.ResourceList("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", gpus), fixtures.ResourceList("nvidia.com/gpu", gpus)).
		Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "1Gi"), nil)
}

// createQuota creates a ResourceQuota and sets its status as the quota controller
// would (envtest runs no controller-manager): hard as in spec, used as given. It
// returns once every running replica's cache shows the status: each replica
// decides from its own cache.
func createQuota(ctx context.Context, q *corev1.ResourceQuota, used corev1.ResourceList) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
	Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
	for _, r := range env.Replicas {
		if !r.Running() {
			continue
		}
		Eventually(func(g Gomega) {
			var cached corev1.ResourceQuota
			g.Expect(r.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(q), &cached)).To(Succeed())
			g.Expect(cached.Status.Used).To(HaveLen(len(used)))
		}).Should(Succeed(), "replica at %s never saw the quota's status", r.Addr)
	}
}

// inParallel runs call(0..n-1) in n goroutines released at once, as many
// clients submitting together, and returns each call's error.
func inParallel(n int, call func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer GinkgoRecover()
			<-start
			errs[i] = call(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// decisionsOf selects the decision-log lines of real (not dry-run) requests
// with operation op on TrainJobs in namespace ns.
func decisionsOf(ns, op string) func(map[string]any) bool {
	return func(line map[string]any) bool {
		return line["namespace"] == ns && line["operation"] == op && line["dryRunRequest"] != true
	}
}

// sum adds counts up.
func sum(counts []int) int {
	total := 0
	for _, c := range counts {
		total += c
	}
	return total
}

// reservedJobs lists the TrainJobs the QuotaReservation of namespace ns holds
// quota for (none when it has no QuotaReservation).
func reservedJobs(ctx context.Context, ns string) []string {
	GinkgoHelper()
	res := &quotav1alpha1.QuotaReservation{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: ns}, res)
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range res.Spec.Entries {
		out = append(out, e.TrainJob)
	}
	return out
}
