package replicas

import (
	"context"
	"fmt"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

// deniedUpdateSpecs: a denied update of a TrainJob, made by a controller that
// only logs the answer (Kueue resuming a job it admitted), is visible on the
// TrainJob itself.
func deniedUpdateSpecs() {
	It("puts a Warning event with the reason on a TrainJob whose resume is denied, repeats aggregated, none for dry runs", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "4"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		rt := createRuntime(ctx, gpuWorkers("replicas-events", "4"))
		// 8 GPUs (2 Workers x 4) against a quota of 4: created suspended (not
		// quota-checked), their resumes are denied.
		job := gpuJob(ns, 0, rt.Name).Suspend(true).Obj()
		dryRunOnly := gpuJob(ns, 1, rt.Name).Suspend(true).Obj()
		for _, j := range []*trainer.TrainJob{job, dryRunOnly} {
			Expect(env.Client.Create(ctx, j)).To(Succeed())
		}
		resume := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`))
		target := func(j *trainer.TrainJob) *trainer.TrainJob {
			return &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: j.Name}}
		}

		// Dry runs first, on a job of their own: they must leave nothing.
		for range 2 {
			err := env.Client.Patch(ctx, target(dryRunOnly), resume, client.DryRunAll)
			Expect(err).To(HaveOccurred(), "a dry-run resume over the quota was allowed")
			Expect(err.Error()).To(ContainSubstring("[aggregate-quota]"))
		}
		// As a controller retries a refused resume.
		const resumes = 4
		for range resumes {
			err := env.Client.Patch(ctx, target(job), resume)
			Expect(err).To(HaveOccurred(), "a resume over the quota was allowed")
			Expect(err.Error()).To(ContainSubstring("[aggregate-quota]"))
		}

		// mpiguard's events on a job (other controllers put events on jobs
		// too: audit, network policies).
		eventsOn := func(g Gomega, j *trainer.TrainJob) []eventsv1.Event {
			var list eventsv1.EventList
			g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var out []eventsv1.Event
			for _, e := range list.Items {
				if e.Regarding.Kind == trainer.TrainJobKind && e.Regarding.Name == j.Name && e.ReportingController == trainjob.EventsController {
					out = append(out, e)
				}
			}
			return out
		}
		// Events are written asynchronously, by whichever replica decided.
		Eventually(func(g Gomega) {
			events := eventsOn(g, job)
			g.Expect(events).NotTo(BeEmpty())
			repeated := false
			for _, e := range events {
				g.Expect(e.Type).To(Equal("Warning"))
				g.Expect(e.Reason).To(Equal(trainjob.ReasonUpdateDenied))
				g.Expect(e.Action).To(Equal("Resume"))
				g.Expect(e.Note).To(HavePrefix("mpiguard denied the resume of this TrainJob by "))
				g.Expect(e.Note).To(ContainSubstring(`[aggregate-quota] spec.trainer: TrainJob needs 8 nvidia.com/gpu (launcher 0 + 2 workers x 4) but ResourceQuota "team-a" has 4 of 4 free`))
				repeated = repeated || (e.Series != nil && e.Series.Count >= 2)
			}
			// The same denial repeated is one event per replica, its series
			// counting the attempts (the recorder writes later counts in
			// batches): 4 denials on 2 replicas repeat on at least one.
			g.Expect(len(events)).To(BeNumerically("<=", len(env.Replicas)), "events: %s", describeEvents(events))
			g.Expect(repeated).To(BeTrue(), "no event counts a repeat: %s", describeEvents(events))
		}).WithContext(ctx).WithTimeout(framework.EventuallyTimeout).Should(Succeed())
		// The dry runs came before the denials whose events are there now.
		Consistently(func(g Gomega) {
			g.Expect(eventsOn(g, dryRunOnly)).To(BeEmpty(), "a dry-run denial left an event")
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
}

func describeEvents(events []eventsv1.Event) string {
	out := ""
	for _, e := range events {
		n := int32(1)
		if e.Series != nil {
			n = e.Series.Count
		}
		out += fmt.Sprintf("\n%s x%d %s/%s/%s: %s", e.Name, n, e.Type, e.Reason, e.Action, e.Note)
	}
	return out
}
