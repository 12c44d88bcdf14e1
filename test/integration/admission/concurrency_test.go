package admission

import (
	"context"
	"fmt"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("concurrent submits", func() {
	It("admit exactly as many TrainJobs as the quota fits: 40 in parallel, room for 10", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		// Each job: 1 Launcher (1 CPU) + 2 Workers x 4 GPUs = 8 GPUs; the quota has 80.
		rt := createRuntime(ctx, gpuWorkers("concurrent-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "80"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))

		const submits = 40
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			accepted []string
			denied   []string
		)
		start := make(chan struct{})
		for i := range submits {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				<-start
				job := fixtures.TrainJob(ns, fmt.Sprintf("job-%02d", i), rt.Name).NumNodes(2).NumProcPerNode(4).Obj()
				err := env.Client.Create(ctx, job)
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					accepted = append(accepted, job.Name)
					return
				}
				Expect(err.Error()).To(ContainSubstring("[aggregate-quota]"), "a submit failed for another reason")
				denied = append(denied, job.Name)
			}()
		}
		close(start)
		wg.Wait()

		Expect(accepted).To(HaveLen(10), "admitted: %v", accepted)
		Expect(denied).To(HaveLen(30))
		var stored trainer.TrainJobList
		Expect(env.Client.List(ctx, &stored, client.InNamespace(ns))).To(Succeed())
		Expect(stored.Items).To(HaveLen(10))
	})
})
