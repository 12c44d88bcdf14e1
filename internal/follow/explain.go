package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/internal/diagnosis"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// Explain prints, for `mpiguard explain`, what the job's objects say:
// its admission, what the policies say of its next write (Judged), its
// reservation, its pods by role and the reasons the follower gives (the same
// Observe and diagnosis decisions). c reads live; judge is the admission
// pipeline with the policies the job is judged by; mpiguardNS is where
// mpiguard keeps its QuotaReservations.
func Explain(ctx context.Context, c client.Reader, judge *pipeline.Pipeline, mpiguardNS string, key client.ObjectKey, out io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var job trainer.TrainJob
	if err := c.Get(ctx, key, &job); err != nil {
		return fmt.Errorf("reading TrainJob %s: %w", key, err)
	}
	mpi, err := IsMPI(ctx, c, &job)
	if err != nil {
		return err
	}
	o, err := Observe(ctx, Readers{Cached: c, Live: c}, &job)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	kind := "not MPI: mpiguard does not follow it"
	if mpi {
		kind = "MPI"
	}
	fmt.Fprintf(w, "TrainJob:\t%s (runtime %s, %s)\n", key, job.Spec.RuntimeRef.Name, kind)
	fmt.Fprintf(w, "Admission:\t%s\n", admission(ctx, c, &job))
	fmt.Fprintf(w, "Policies now:\t%s\n", Judged(ctx, c, judge, mpiguardNS, &job))
	fmt.Fprintf(w, "Reservation:\t%s\n", reservation(ctx, c, mpiguardNS, &job, o))
	fmt.Fprintf(w, "Phase:\t%s\n", o.Phase())
	now := time.Now()
	var parameter func(policy, name string) (any, bool)
	if judge != nil {
		parameter = judge.Engine().Parameter
	}
	percent := warnAtPercent(parameter)
	near, nearDue := o.DeadlineNear(now, percent)
	if d := o.DeadlineState(now); d != "" {
		switch {
		case near != nil:
			d += fmt.Sprintf("; past the %g%% Warning (%s)", percent, diagnosis.ReasonDeadlineNear)
		case !nearDue.IsZero():
			d += fmt.Sprintf("; the %g%% Warning (%s) at %s", percent, diagnosis.ReasonDeadlineNear, nearDue.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(w, "Deadline:\t%s\n", d)
	}
	_ = w.Flush()

	fmt.Fprintln(out, "Pods:")
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	pods := o.Pods.All()
	// The Launcher first, then the Workers by index.
	sort.SliceStable(pods, func(i, j int) bool {
		return diagnosis.Role(&pods[i]) == diagnosis.RoleLauncher && diagnosis.Role(&pods[j]) != diagnosis.RoleLauncher
	})
	for i := range pods {
		fmt.Fprintf(w, "  %s\t%s\n", diagnosis.Name(&pods[i]), diagnosis.PodState(&pods[i]))
	}
	if missing := int(o.ExpectedWorkers) - len(o.Pods.Workers); missing > 0 {
		fmt.Fprintf(w, "  %d of %d Workers\tnot created\n", missing, o.ExpectedWorkers)
	}
	if missing := int(o.ExpectedLaunchers) - len(o.Pods.Launcher); missing > 0 {
		fmt.Fprintf(w, "  Launcher\tnot created\n")
	}
	if len(pods) == 0 && o.ExpectedWorkers == 0 {
		fmt.Fprintf(w, "  none\t(no JobSet yet)\n")
	}
	_ = w.Flush()

	fmt.Fprintln(out, "Reason:")
	reasons := o.Failures()
	if wt := o.Waiting(); wt != nil {
		reasons = append([]diagnosis.Finding{*wt}, reasons...)
	}
	if near != nil {
		reasons = append(reasons, *near)
	}
	if len(reasons) == 0 {
		fmt.Fprintf(out, "  none: %s\n", map[diagnosis.Phase]string{
			diagnosis.PhaseWaiting:   "its pods are being created, scheduled or started",
			diagnosis.PhaseRunning:   "every Launcher and Worker pod runs",
			diagnosis.PhaseSucceeded: "it succeeded",
			diagnosis.PhaseFailed:    "it failed without a pod saying why (see its conditions: kubectl get trainjob -o yaml)",
			diagnosis.PhaseSuspended: "it is suspended (spec.suspend), and no Kueue queue holds it",
		}[o.Phase()])
	}
	for _, r := range reasons {
		fmt.Fprintf(out, "  %s %s: %s\n", r.Type, r.Reason, r.Message)
	}
	return nil
}

// admission says how the job was admitted: mpiguard's webhooks judged its
// create unless it is exempt; Kueue's Workload and its admission checks
// when Kueue manages it; mpiguard's refusals of its updates.
func admission(ctx context.Context, c client.Reader, job *trainer.TrainJob) string {
	parts := []string{"admitted by mpiguard's webhooks at its creation " + job.CreationTimestamp.UTC().Format(time.RFC3339)}
	if v, ok := job.Labels[pipeline.ExemptLabel]; ok {
		parts[0] = fmt.Sprintf("exempt from mpiguard's policies (label %s=%s)", pipeline.ExemptLabel, v)
	}
	wl, err := Workload(ctx, c, job)
	switch {
	case err != nil:
		parts = append(parts, "Kueue: cannot read its Workload: "+err.Error())
	case wl != nil:
		state := "not admitted"
		if meta.IsStatusConditionTrue(wl.Status.Conditions, "Admitted") {
			state = "admitted"
		}
		s := fmt.Sprintf("Kueue: Workload %s %s", wl.Name, state)
		for _, ch := range wl.Status.AdmissionChecks {
			s += fmt.Sprintf("; check %s %s", ch.Name, ch.State)
			if ch.Message != "" {
				s += ": " + ch.Message
			}
		}
		parts = append(parts, s)
	}
	var evs corev1.EventList
	if err := c.List(ctx, &evs, client.InNamespace(job.Namespace), client.MatchingFields{"involvedObject.uid": string(job.UID)}); err == nil {
		for _, e := range evs.Items {
			if e.Reason == "UpdateDenied" || e.Reason == "UpdateNotDecided" {
				parts = append(parts, fmt.Sprintf("%s: %s", e.Reason, e.Message))
			}
		}
	}
	return strings.Join(parts, "\n\t")
}

// Judged says what the policies of judge make of the stored job's next
// write, judged as audit judges it (audit.Auditor.Job): a job that waits for
// its pods (suspended, as Kueue keeps a queued job) as its resume, the write
// that starts its pods, against its namespace's quotas and what admitted
// jobs hold of them; a running job as the update that leaves it as it is.
// Without the right to read mpiguard's QuotaReservations, the job's
// Namespace or the Nodes (a tenant) it judges without them and says so
// (audit.SkipUnreadable, audit.SkipForbidden).
func Judged(ctx context.Context, c client.Reader, judge *pipeline.Pipeline, mpiguardNS string, job *trainer.TrainJob) string {
	ledger := &audit.SkipUnreadable{ReservationReader: store.NewStore(c, c, nil, mpiguardNS)}
	reads := &audit.SkipForbidden{Reader: c}
	auditor := &audit.Auditor{Pipeline: judge, Cluster: pipeline.ClientCluster{Reader: reads, Live: reads}, Reservations: ledger}
	req, v, err := auditor.Job(ctx, job)
	var lines []string
	switch {
	case req == nil && err == nil:
		return "not judged: the job finished or is being deleted, and no write starts its pods again"
	case req == nil:
		lines = append(lines, "cannot judge: "+err.Error())
	case err != nil:
		lines = append(lines, fmt.Sprintf("ERROR, %s: %s (admission would refuse it with this error)", judgedAs(req), err))
	case !v.Governed:
		lines = append(lines, "ALLOWED: not governed (not an MPI TrainJob, or its namespace is exempt)")
	default:
		outcome := "DENIED"
		if v.Allowed() {
			outcome = "ALLOWED"
		}
		lines = append(lines, fmt.Sprintf("%s, %s", outcome, judgedAs(req)))
		for _, x := range v.Decision.Violations {
			lines = append(lines, fmt.Sprintf("%-6s %s", x.Action, pipeline.ViolationLine(x)))
		}
	}
	for _, note := range []string{reads.Note(), ledger.Note(mpiguardNS)} {
		if note != "" {
			lines = append(lines, note)
		}
	}
	return strings.Join(lines, "\n\t")
}

// judgedAs says which write of the stored job req is.
func judgedAs(req *pipeline.Request) string {
	if jobstate.Resumes(req.OldTrainJob, req.TrainJob) {
		return "judged as its resume: the job waits for its pods, and resuming it, as Kueue does to admit it, is the write that starts them and that the quota policies judge"
	}
	return "judged as it is stored: its pods exist, and an update that leaves it as it is starts nothing the quota policies judge"
}

// reservation says what quota mpiguard holds for the job, from its
// QuotaReservation entry.
func reservation(ctx context.Context, c client.Reader, mpiguardNS string, job *trainer.TrainJob, o diagnosis.Observation) string {
	res, err := store.NewStore(c, c, nil, mpiguardNS).Get(ctx, job.Namespace, true)
	if err != nil {
		if apierrors.IsForbidden(errors.Unwrap(err)) || apierrors.IsForbidden(err) {
			return "cannot read mpiguard's QuotaReservations (" + err.Error() + ")"
		}
		return "cannot read: " + err.Error()
	}
	held := store.Reservations(res)
	for i, e := range res.Spec.Entries {
		if !store.SameJob(&e, job.Name, job.UID) {
			continue
		}
		var parts []string
		for _, p := range held[i].Parts {
			parts = append(parts, part(p))
		}
		return fmt.Sprintf("holds quota since %s (%s) until its pods exist, at the latest %s: %s",
			e.AdmittedAt.UTC().Format(time.RFC3339), e.Operation, e.HoldUntil.UTC().Format(time.RFC3339), strings.Join(parts, "; "))
	}
	if len(o.Pods.All()) > 0 {
		return "none held: its pods exist, and the namespace's ResourceQuotas count them"
	}
	return "none held"
}

func part(p quota.Part) string {
	var res []string
	for name, q := range p.PerPod {
		res = append(res, fmt.Sprintf("%s=%s", name, q.String()))
	}
	sort.Strings(res)
	what := p.ReplicatedJob
	switch what {
	case "launcher":
		what = "Launcher"
	case "node":
		what = "Workers"
	}
	return fmt.Sprintf("%s: %d pods × {%s}", what, p.Pods, strings.Join(res, ", "))
}
