package diagnosis

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runningJob is a job whose Launcher and one Worker run, with a two-hour
// deadline counted from t0.
func runningJob() Observation {
	o := base()
	o.ExpectedWorkers = 1
	o.Pods = Pods{Launcher: []corev1.Pod{launcher(running)}, Workers: []corev1.Pod{worker(0, running)}}
	o.Deadline = Deadline{Started: t0, Max: 2 * time.Hour}
	return o
}

func TestDeadlineNear(t *testing.T) {
	warning := &Finding{Key: "deadline-near/2026-01-01T00:00:00Z", Type: "Warning", Reason: ReasonDeadlineNear,
		Message: "the TrainJob has run 1h36m0s, 80% of its maximum duration 2h0m0s (spec.activeDeadlineSeconds 7200, counted from its start or last resume at 2026-01-01T00:00:00Z): at 2026-01-01T02:00:00Z the Trainer stops its Launcher and Workers and fails it with DeadlineExceeded. Write a checkpoint now and resume from it in a new TrainJob, or ask an admin for a longer limit (mpiguard's max-duration policy caps spec.activeDeadlineSeconds, which cannot change once set); see docs/troubleshooting.md#deadline-near"}
	at80 := t0.Add(96 * time.Minute)
	cases := map[string]struct {
		obs      func(o *Observation)
		now      time.Time
		percent  float64
		want     *Finding
		wantNext time.Time
	}{
		"before the threshold: due at 80%": {now: at80.Add(-time.Second), percent: 80, wantNext: at80},
		"at the threshold":                 {now: at80, percent: 80, want: warning},
		"past it, the same message (judged later, by another leader)": {
			now: at80.Add(17 * time.Minute), percent: 80, want: warning,
		},
		"while its pods still wait: the deadline counts": {
			obs: func(o *Observation) { o.Pods.Workers = []corev1.Pod{worker(0, unschedulable)} },
			now: at80, percent: 80, want: warning,
		},
		"no deadline":                               {obs: func(o *Observation) { o.Deadline.Max = 0 }, now: at80, percent: 80},
		"threshold 0 turns it off":                  {now: at80, percent: 0},
		"threshold 100 is the deadline itself: off": {now: t0.Add(3 * time.Hour), percent: 100},
		"a lower threshold": {
			now: t0.Add(time.Hour), percent: 50,
			want: &Finding{Key: warning.Key, Type: "Warning", Reason: ReasonDeadlineNear,
				Message: "the TrainJob has run 1h0m0s, 50% of its maximum duration 2h0m0s (spec.activeDeadlineSeconds 7200, counted from its start or last resume at 2026-01-01T00:00:00Z): at 2026-01-01T02:00:00Z the Trainer stops its Launcher and Workers and fails it with DeadlineExceeded. Write a checkpoint now and resume from it in a new TrainJob, or ask an admin for a longer limit (mpiguard's max-duration policy caps spec.activeDeadlineSeconds, which cannot change once set); see docs/troubleshooting.md#deadline-near"},
		},
		"suspended: the Trainer does not count": {
			obs: func(o *Observation) { o.Suspended = true }, now: at80, percent: 80,
		},
		"held by Kueue: the Trainer does not count": {
			obs: func(o *Observation) { o.Suspended, o.Queue = true, "lq" }, now: at80, percent: 80,
		},
		"succeeded": {
			obs: func(o *Observation) {
				o.TrainJobComplete = &metav1.Condition{Type: "Complete", Status: "True"}
			},
			now: at80, percent: 80,
		},
		"failed": {
			obs: func(o *Observation) {
				o.TrainJobFailed = &metav1.Condition{Type: "Failed", Status: "True", Reason: "DeadlineExceeded"}
			},
			now: t0.Add(3 * time.Hour), percent: 80,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := runningJob()
			if tc.obs != nil {
				tc.obs(&o)
			}
			got, next := o.DeadlineNear(tc.now, tc.percent)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DeadlineNear (-want +got):\n%s", diff)
			}
			if !next.Equal(tc.wantNext) {
				t.Errorf("next = %v, want %v", next, tc.wantNext)
			}
		})
	}
}

// A resume starts a new count, and a new Warning (its own key).
func TestDeadlineNearAfterResume(t *testing.T) {
	o := runningJob()
	first, _ := o.DeadlineNear(t0.Add(2*time.Hour), 80)
	o.Deadline.Started = t0.Add(5 * time.Hour)
	second, next := o.DeadlineNear(t0.Add(5*time.Hour+time.Minute), 80)
	if first == nil || second != nil || !next.Equal(t0.Add(5*time.Hour+96*time.Minute)) {
		t.Fatalf("first %v, second %v due %v", first, second, next)
	}
	second, _ = o.DeadlineNear(next, 80)
	if second == nil || second.Key == first.Key {
		t.Fatalf("after a resume the Warning must be given again under its own key: first %v, second %v", first, second)
	}
}

func TestDeadlineState(t *testing.T) {
	o := runningJob()
	if got, want := o.DeadlineState(t0.Add(30*time.Minute)), "30m0s of 2h0m0s used (25%); the Trainer stops it at 2026-01-01T02:00:00Z"; got != want {
		t.Errorf("DeadlineState = %q, want %q", got, want)
	}
	o.Deadline.Max = 0
	if got := o.DeadlineState(t0); got != "" {
		t.Errorf("DeadlineState without a deadline = %q, want empty", got)
	}
}

// TestRecorded checks a DeadlineNear Warning is recognised in the job's
// Events by the run it counts from, whatever percent it was given at, and a
// failure by its message only.
func TestRecorded(t *testing.T) {
	o := runningJob()
	at80, _ := o.DeadlineNear(t0.Add(2*time.Hour), 80)
	at90, _ := o.DeadlineNear(t0.Add(2*time.Hour), 90)
	resumed := o
	resumed.Deadline.Started = t0.Add(5 * time.Hour)
	nextRun, _ := resumed.DeadlineNear(t0.Add(7*time.Hour), 80)
	failure := Finding{Key: "failed/x", Type: "Warning", Reason: "JobSetFailed", Message: "the Launcher failed"}
	cases := map[string]struct {
		f               Finding
		reason, message string
		want            bool
	}{
		"the same Warning":                     {*at80, ReasonDeadlineNear, at80.Message, true},
		"given at 80%, now at 90%":             {*at90, ReasonDeadlineNear, at80.Message, true},
		"given in the run before a resume":     {*nextRun, ReasonDeadlineNear, at80.Message, false},
		"the run's start in another reason":    {*at90, "Other", at80.Message, false},
		"the same failure":                     {failure, "JobSetFailed", failure.Message, true},
		"another failure with the same reason": {failure, "JobSetFailed", "the Worker failed", false},
	}
	for name, tc := range cases {
		if got := Recorded(tc.f, tc.reason, tc.message); got != tc.want {
			t.Errorf("%s: Recorded = %v, want %v", name, got, tc.want)
		}
	}
}
