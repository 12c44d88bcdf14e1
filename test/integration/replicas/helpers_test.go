package replicas

import (
	"context"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// createRuntime creates a ClusterTrainingRuntime for one spec and deletes it afterwards.
func createRuntime(ctx context.Context, b *fixtures.RuntimeBuilder) *trainer.ClusterTrainingRuntime {
	GinkgoHelper()
	return env.CreateClusterRuntime(ctx, b.Cluster())
}

// gpuWorkers is an MPI runtime whose Workers (node job) each have gpus GPUs and 4 CPUs.
func gpuWorkers(name, gpus string) *fixtures.RuntimeBuilder {
	return fixtures.GPUWorkersRuntime(name, gpus)
}

// createQuota creates a ResourceQuota with the given status.used (see Env.CreateQuota).
func createQuota(ctx context.Context, q *corev1.ResourceQuota, used corev1.ResourceList) {
	GinkgoHelper()
	env.CreateQuota(ctx, q, used)
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
