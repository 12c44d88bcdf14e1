package admission

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("reservations held on trust", func() {
	It("are capped per namespace: past --max-unconfirmed-reservations a create is told to retry, and the quota is whole again after the grace", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("unconfirmed-"+ns, "1"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "1000"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		// The apiserver's own quota admission runs after the webhooks: every
		// TrainJob object is refused after mpiguard admitted it and reserved
		// its GPUs, so each create leaves an entry whose TrainJob never appears,
		// as a forged review does.
		createQuota(ctx, fixtures.ResourceQuota(ns, "no-trainjobs", "count/trainjobs.trainer.kubeflow.org", "0"), fixtures.ResourceList("count/trainjobs.trainer.kubeflow.org", "0"))

		var (
			mu      sync.Mutex
			capped  []string
			created int
		)
		// Bursts of one more create than the cap: entries expire after the
		// grace (2 s), so a burst slowed down by a busy machine may not reach
		// the cap; the next one does.
		Eventually(func(g Gomega) {
			var wg sync.WaitGroup
			for range maxUnconfirmed + 1 {
				mu.Lock()
				created++
				name := fmt.Sprintf("never-%03d", created)
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					err := env.Client.Create(ctx, fixtures.TrainJob(ns, name, rt.Name).NumNodes(2).NumProcPerNode(1).Obj())
					Expect(err).To(HaveOccurred(), "no TrainJob may be created in this namespace")
					mu.Lock()
					defer mu.Unlock()
					if strings.Contains(err.Error(), "quota reservations of TrainJobs admitted but not yet created") {
						capped = append(capped, err.Error())
					} else {
						Expect(err.Error()).To(ContainSubstring("no-trainjobs"), "admitted by mpiguard, refused by the apiserver's quota")
					}
				}()
			}
			wg.Wait()
			g.Expect(len(env.ReservedJobs(ctx, ns))).To(BeNumerically("<=", maxUnconfirmed), "more entries held on trust than the cap")
			mu.Lock()
			defer mu.Unlock()
			g.Expect(capped).NotTo(BeEmpty(), "no create was refused at the cap")
		}).WithTimeout(60 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
		Expect(capped[0]).To(And(
			ContainSubstring("[quota-reservation]"),
			ContainSubstring(fmt.Sprintf("namespace %s already holds %d quota reservations", ns, maxUnconfirmed)),
			ContainSubstring(fmt.Sprintf("limit %d", maxUnconfirmed)),
			ContainSubstring("retry in a few seconds"),
		))

		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).WithTimeout(reservationGrace+20*time.Second).Should(BeEmpty(),
			"entries whose TrainJob never appeared are released after the grace")
		Expect(env.Client.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-trainjobs"}})).To(Succeed())
		Eventually(func() error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, "real", rt.Name).NumNodes(2).NumProcPerNode(1).Obj())
		}).Should(Succeed(), "a real create is decided again once the entries are gone")
	})
})
