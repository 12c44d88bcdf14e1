package replicas

import (
	"context"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The quota acceptance test across replicas: 40 TrainJobs of 8 GPUs each
// (1 Launcher + 2 Workers x 4 GPUs) asked for at once against a quota of 80
// GPUs. Exactly 10 may start, whichever replica decides each request, and both
// replicas must really decide (else a run that happened to reach one replica
// proves nothing). Rounds repeat it, a fresh namespace each, since one lucky
// interleaving proves nothing either.
const (
	rounds   = 10
	submits  = 40
	fits     = 10 // 80 GPUs / 8 GPUs per job
	minShare = 5  // quota decisions each replica makes per round, at least
)

func quotaSpecs() {
	It("admit exactly as many of 40 parallel creates as the quota fits, decided by both replicas", func(ctx context.Context) {
		rt := createRuntime(ctx, gpuWorkers("replicas-create", "4"))
		var results []quotaRound
		for range rounds {
			ns := quotaNamespace(ctx)
			errs := inParallel(submits, func(i int) error {
				return env.Client.Create(ctx, gpuJob(ns, i, rt.Name).Obj())
			})
			results = append(results, tally(ctx, ns, errs, "CREATE"))
		}
		expectQuotaHeld(results)
	})

	It("admit exactly as many of 40 parallel resumes as the quota fits, decided by both replicas", func(ctx context.Context) {
		rt := createRuntime(ctx, gpuWorkers("replicas-resume", "4"))
		resume := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
		var results []quotaRound
		for range rounds {
			ns := quotaNamespace(ctx)
			// Suspended jobs start nothing: their creates are not quota-checked.
			for i, err := range inParallel(submits, func(i int) error {
				return env.Client.Create(ctx, gpuJob(ns, i, rt.Name).Suspend(true).Obj())
			}) {
				Expect(err).NotTo(HaveOccurred(), "creating suspended job %d", i)
			}
			// A merge patch, as Kueue flips spec.suspend: no resourceVersion, no conflicts.
			errs := inParallel(submits, func(i int) error {
				job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: jobName(i)}}
				return env.Client.Patch(ctx, job, resume)
			})
			results = append(results, tally(ctx, ns, errs, "UPDATE"))
		}
		expectQuotaHeld(results)
	})
}

// quotaNamespace is a fresh namespace with 80 GPUs of quota, none used.
func quotaNamespace(ctx context.Context) string {
	GinkgoHelper()
	ns := env.Namespace(ctx, nil)
	createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "80"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
	return ns
}

func jobName(i int) string { return fmt.Sprintf("job-%02d", i) }

// gpuJob is one 8-GPU job: 2 Workers x 4 GPUs on a gpuWorkers runtime.
func gpuJob(ns string, i int, runtime string) *fixtures.TrainJobBuilder {
	return fixtures.TrainJob(ns, jobName(i), runtime).NumNodes(2).NumProcPerNode(4)
}

// quotaRound is what one round of parallel requests came to.
type quotaRound struct {
	namespace        string
	admitted, denied int
	// running counts the stored TrainJobs that are not suspended.
	running int
	// decisions counts the round's quota decisions per replica.
	decisions []int
	// unexpected are failures other than a quota denial.
	unexpected []string
}

func (r quotaRound) String() string {
	return fmt.Sprintf("%s: %d admitted, %d denied, %d running, decisions per replica %v, other failures %d",
		r.namespace, r.admitted, r.denied, r.running, r.decisions, len(r.unexpected))
}

// tally reads one round's outcome: the requests' errors, the stored jobs and
// the replicas' decision logs for operation op in ns.
func tally(ctx context.Context, ns string, errs []error, op string) quotaRound {
	GinkgoHelper()
	r := quotaRound{namespace: ns}
	for _, err := range errs {
		switch {
		case err == nil:
			r.admitted++
		case strings.Contains(err.Error(), "[aggregate-quota]"):
			r.denied++
		default:
			r.unexpected = append(r.unexpected, err.Error())
		}
	}
	var stored trainer.TrainJobList
	Expect(env.Client.List(ctx, &stored, client.InNamespace(ns))).To(Succeed())
	for _, job := range stored.Items {
		if !ptr.Deref(job.Spec.Suspend, false) {
			r.running++
		}
	}
	r.decisions = env.DecisionsPerReplica(decisionsOf(ns, op))
	return r
}

// expectQuotaHeld fails unless every round admitted exactly what fits, with
// both replicas deciding; it reports every round, so a failure shows how far
// off each one was, not only the first.
func expectQuotaHeld(results []quotaRound) {
	GinkgoHelper()
	var report strings.Builder
	var problems []string
	for i, r := range results {
		fmt.Fprintf(&report, "round %d: %s\n", i+1, r)
		if r.admitted != fits || r.running != fits {
			problems = append(problems, fmt.Sprintf("round %d: %d admitted, %d running, want %d", i+1, r.admitted, r.running, fits))
		}
		for replica, n := range r.decisions {
			if n < minShare {
				problems = append(problems, fmt.Sprintf("round %d: replica %d made %d quota decisions, want at least %d", i+1, replica, n, minShare))
			}
		}
		for _, msg := range r.unexpected {
			problems = append(problems, fmt.Sprintf("round %d: a request failed for another reason than quota: %s", i+1, msg))
		}
	}
	AddReportEntry("rounds", report.String())
	Expect(problems).To(BeEmpty(), "per round:\n%s", report.String())
}
