package networkpolicies

import (
	"bufio"
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// scaleEnv turns the scale run on and sets its job count; it is off in `make
// test` because it measures rather than checks one behaviour. Reproduce with
// `make bench-networkpolicies` (docs/performance.md, section NetworkPolicies).
const scaleEnv = "MPIGUARD_NETPOL_SCALE"

var _ = Describe("NetworkPolicies at scale", Label("scale"), func() {
	It("converges N MPI TrainJobs to N correct NetworkPolicies", func(ctx context.Context) {
		n := scaleJobs()
		ns := env.Namespace(ctx, nil)
		rt := fixtures.MPIRuntime("np-scale-" + ns).Cluster()
		createRuntime(ctx, rt)

		createdBefore, updatedBefore, repairedBefore := changes("created"), changes("updated"), changes("repaired")
		before := memory()

		By(fmt.Sprintf("creating %d MPI TrainJobs through the apiserver and mpiguard's webhooks", n))
		start := time.Now()
		uids := createJobs(ctx, ns, rt.Name, n)
		created := time.Since(start)

		if os.Getenv(scaleBaselineEnv) == "true" {
			// Controller off: give the other informers time to take in the jobs.
			time.Sleep(10 * time.Second)
			after := memory()
			report := fmt.Sprintf(`
NetworkPolicies scale baseline: %d MPI TrainJobs, whole mpiguard with the NetworkPolicy controller OFF, %d cores
  create %d TrainJobs (8 clients):                   %s (%.0f jobs/s)
  Go heap in use after GC (manager + test client):    %.1f MiB before -> %.1f MiB after
  process RSS:                                        %.1f MiB before -> %.1f MiB after; peak %.1f MiB`,
				n, goruntime.NumCPU(), n, created.Round(time.Millisecond), float64(n)/created.Seconds(),
				mib(before.heap), mib(after.heap), mib(before.rss), mib(after.rss), mib(after.peakRSS))
			AddReportEntry("scale", report)
			fmt.Fprintln(os.Stdout, report)
			return
		}

		By("waiting until every job has exactly its policy")
		var converged time.Duration
		Eventually(func(g Gomega) {
			g.Expect(correctPolicies(ctx, g, ns, uids, ingressIsolated)).To(Equal(n))
			converged = time.Since(start)
		}).WithTimeout(10 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		after := memory()
		Expect(changes("created")-createdBefore).To(Equal(float64(n)), "one create per job, no more")
		Expect(changes("updated")-updatedBefore).To(BeZero(), "no policy rewritten while converging")
		Expect(changes("repaired")-repairedBefore).To(BeZero(), "no policy mistaken for drifted")

		By("switching the namespace to restricted: every policy is rewritten")
		switchStart := time.Now()
		annotateNamespace(ctx, ns, "mpiguard.io/network-policy", "restricted")
		Eventually(func(g Gomega) {
			g.Expect(correctPolicies(ctx, g, ns, uids, func(job string) networkingv1.NetworkPolicySpec {
				return restricted(job, 2222, 50000, 50999)
			})).To(Equal(n))
		}).WithTimeout(10 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		switched := time.Since(switchStart)
		Expect(changes("updated")-updatedBefore).To(Equal(float64(n)), "one update per job")

		By("deleting every policy at once: every one is repaired")
		repairStart := time.Now()
		Expect(env.Client.DeleteAllOf(ctx, &networkingv1.NetworkPolicy{}, client.InNamespace(ns))).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(correctPolicies(ctx, g, ns, uids, func(job string) networkingv1.NetworkPolicySpec {
				return restricted(job, 2222, 50000, 50999)
			})).To(Equal(n))
		}).WithTimeout(10 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		repaired := time.Since(repairStart)
		Expect(changes("repaired")-repairedBefore).To(Equal(float64(n)), "one repair per job")

		wiring := "whole mpiguard (webhooks and every controller)"
		report := fmt.Sprintf(`
NetworkPolicies scale run: %d MPI TrainJobs, %s, %d cores, GOMAXPROCS %d
  create %d TrainJobs (8 clients):                   %s (%.0f jobs/s)
  first create -> all %d policies correct:            %s
  last create  -> all policies correct:               %s
  namespace switched to restricted -> all rewritten:  %s
  all %d policies deleted at once -> all repaired:    %s
  Go heap in use after GC (manager + test client):    %.1f MiB before -> %.1f MiB after (+%.1f MiB, %.1f KiB per job)
  process RSS:                                        %.1f MiB before -> %.1f MiB after; peak %.1f MiB`,
			n, wiring, goruntime.NumCPU(), goruntime.GOMAXPROCS(0),
			n, created.Round(time.Millisecond), float64(n)/created.Seconds(),
			n, converged.Round(time.Millisecond),
			(converged - created).Round(time.Millisecond),
			switched.Round(time.Millisecond),
			n, repaired.Round(time.Millisecond),
			mib(before.heap), mib(after.heap), (float64(after.heap)-float64(before.heap))/(1<<20),
			(float64(after.heap)-float64(before.heap))/1024/float64(n),
			mib(before.rss), mib(after.rss), mib(memory().peakRSS))
		AddReportEntry("scale", report)
		fmt.Fprintln(os.Stdout, report)
	})
})

func scaleJobs() int {
	v := os.Getenv(scaleEnv)
	if v == "" {
		Skip(fmt.Sprintf("scale run off; set %s=1000 (or use make bench-networkpolicies)", scaleEnv))
	}
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred(), "%s=%q is not a job count", scaleEnv, v)
	Expect(n).To(BeNumerically(">", 0))
	return n
}

// createJobs creates jobs scale-0000.. with 8 concurrent clients and returns
// their UIDs by name.
func createJobs(ctx context.Context, ns, runtime string, n int) map[string]types.UID {
	GinkgoHelper()
	var (
		mu   sync.Mutex
		uids = make(map[string]types.UID, n)
		wg   sync.WaitGroup
		errs = make(chan error, n)
		next = make(chan int)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer GinkgoRecover()
			defer wg.Done()
			for i := range next {
				job := fixtures.TrainJob(ns, fmt.Sprintf("scale-%04d", i), runtime).NumNodes(2).Obj()
				if err := env.Client.Create(ctx, job); err != nil {
					errs <- fmt.Errorf("creating %s: %w", job.Name, err)
					continue
				}
				mu.Lock()
				uids[job.Name] = job.UID
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
	return uids
}

// correctPolicies reads the namespace's policies from the apiserver (not a
// cache) and counts those that are exactly want(job) and owned by their job.
func correctPolicies(ctx context.Context, g Gomega, ns string, uids map[string]types.UID, want func(job string) networkingv1.NetworkPolicySpec) int {
	var list networkingv1.NetworkPolicyList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	ok := 0
	for i := range list.Items {
		p := &list.Items[i]
		uid, isJob := uids[p.Name]
		g.Expect(isJob).To(BeTrue(), "policy %s belongs to no job", p.Name)
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != uid {
			continue
		}
		if equality.Semantic.DeepEqual(p.Spec, want(p.Name)) {
			ok++
		}
	}
	return ok
}

type memSample struct{ heap, rss, peakRSS uint64 }

// memory samples the Go heap after a GC and the process RSS (/proc/self/status).
func memory() memSample {
	goruntime.GC()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	s := memSample{heap: ms.HeapInuse}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return s
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[0], 10, 64)
		switch k {
		case "VmRSS":
			s.rss = kb * 1024
		case "VmHWM":
			s.peakRSS = kb * 1024
		}
	}
	return s
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
