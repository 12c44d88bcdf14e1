package diagnosis

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ReasonDeadlineNear is the Warning that a job has used most of its maximum
// duration (spec.activeDeadlineSeconds) and will soon be stopped.
const ReasonDeadlineNear = "DeadlineNear"

// Deadline is where a job stands against its maximum duration, as the
// Trainer counts it: spec.activeDeadlineSeconds from its start (its creation,
// or its last resume: the Trainer's Suspended condition turned False), after
// which the Trainer deletes its JobSet and fails it with DeadlineExceeded.
type Deadline struct {
	// Started is when the count began; Max the TrainJob's
	// spec.activeDeadlineSeconds.
	Started time.Time
	Max     time.Duration
}

// deadlineCounts says whether the deadline runs now: the job has one, and is neither
// suspended nor finished (the Trainer stops counting then).
func (o Observation) deadlineCounts() bool {
	p := o.Phase()
	return o.Deadline.Max > 0 && !o.Deadline.Started.IsZero() && (p == PhaseWaiting && !o.Suspended || p == PhaseRunning)
}

// Ends is when the Trainer stops the job.
func (d Deadline) Ends() time.Time { return d.Started.Add(d.Max) }

// warnAt is when percent of the maximum duration has passed.
func (d Deadline) warnAt(percent float64) time.Time {
	return d.Started.Add(time.Duration(float64(d.Max) * percent / 100).Round(time.Second))
}

// DeadlineNear is the Warning to give once the job has run percent of its
// maximum duration, nil before that, when percent is not in (0, 100), and
// when the deadline does not count (no deadline, suspended, finished). next
// is when the Warning becomes due, zero when it never will in this state.
// The message depends only on the job's start, deadline and percent, never
// on when it is judged, and names the start (Recorded), so a follower that
// reads it back from the job's Events recognizes it was given (after a
// leader change, and after an admin changed the percent); its key changes
// with each start, so a resumed job is warned again in its new run.
func (o Observation) DeadlineNear(now time.Time, percent float64) (near *Finding, next time.Time) {
	if percent <= 0 || percent >= 100 || !o.deadlineCounts() {
		return nil, time.Time{}
	}
	d := o.Deadline
	at := d.warnAt(percent)
	if now.Before(at) {
		return nil, at
	}
	elapsed := at.Sub(d.Started)
	f := finding(deadlineNearKey+d.Started.UTC().Format(time.RFC3339), corev1.EventTypeWarning, ReasonDeadlineNear,
		fmt.Sprintf("the TrainJob has run %s, %g%% of its maximum duration %s (spec.activeDeadlineSeconds %d, %s): at %s the Trainer stops its Launcher and Workers and fails it with DeadlineExceeded. Write a checkpoint now and resume from it in a new TrainJob, or ask an admin for a longer limit (mpiguard's max-duration policy caps spec.activeDeadlineSeconds, which cannot change once set)",
			elapsed, percent, d.Max, int64(d.Max/time.Second), countedFrom(d.Started), d.Ends().UTC().Format(time.RFC3339)))
	return &f, time.Time{}
}

// deadlineNearKey and the start of the run (RFC 3339) are a DeadlineNear
// Warning's Finding.Key: one Warning per run.
const deadlineNearKey = "deadline-near/"

// countedFrom names the start a DeadlineNear Warning counts from.
func countedFrom(started time.Time) string {
	return "counted from its start or last resume at " + started.UTC().Format(time.RFC3339)
}

// Recorded says whether an Event of reason with message records finding f:
// the same message, or, for the DeadlineNear Warning, one counted from the
// same start at whatever percent (an admin may have changed warnAtPercent
// since it was given).
func Recorded(f Finding, reason, message string) bool {
	if message == f.Message {
		return true
	}
	if f.Reason != ReasonDeadlineNear || reason != ReasonDeadlineNear {
		return false
	}
	started, ok := strings.CutPrefix(f.Key, deadlineNearKey)
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339, started)
	return err == nil && strings.Contains(message, countedFrom(t)+")")
}

// DeadlineState says, for `mpiguard explain`, how much of its maximum
// duration the job has used; "" when the deadline does not count now.
func (o Observation) DeadlineState(now time.Time) string {
	if !o.deadlineCounts() {
		return ""
	}
	d := o.Deadline
	elapsed := now.Sub(d.Started).Round(time.Second)
	return fmt.Sprintf("%s of %s used (%.0f%%); the Trainer stops it at %s", elapsed, d.Max, 100*elapsed.Seconds()/d.Max.Seconds(), d.Ends().UTC().Format(time.RFC3339))
}
