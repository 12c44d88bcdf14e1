package diagnosis

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
)

// Warning is one Warning event about a job's JobSet or one of its Jobs.
// Pods the apiserver refuses to create leave no object behind: the Job
// controller's FailedCreate (and the JobSet controller's JobCreationFailed)
// is all there is.
type Warning struct {
	// Kind and Name are the object's ("Job", "JobSet").
	Kind, Name      string
	Reason, Message string
	// Count is how many times it happened; Last when it last did.
	Count int32
	Last  time.Time
}

// WarningOf reads an event written through either events API (the Job
// controller writes core/v1 Events, controller-runtime's recorder
// events.k8s.io/v1 ones with a series).
func WarningOf(e *corev1.Event) Warning {
	w := Warning{Kind: e.InvolvedObject.Kind, Name: e.InvolvedObject.Name, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Last: e.LastTimestamp.Time}
	if w.Last.IsZero() {
		w.Last = e.EventTime.Time
	}
	if s := e.Series; s != nil {
		w.Count, w.Last = max(s.Count, w.Count), s.LastObservedTime.Time
	}
	return w
}

// JobFailure is a Job's Failed condition.
type JobFailure struct {
	Job, Reason, Message string
	// ReplicatedJob is the JobSet replicated job the Job belongs to
	// ("launcher", "node"); At when its Failed condition became True.
	ReplicatedJob string
	At            time.Time
}

// Event reasons that mean an object was not created: the Job controller's
// for pods, the JobSet controller's for Jobs.
const (
	EventFailedCreate      = "FailedCreate"
	EventJobCreationFailed = "JobCreationFailed"
)

// Refusal is why pods (or Jobs) are missing: the apiserver refused them.
type Refusal struct {
	// Reason classifies the refusal: api.ReasonPodSecurity,
	// ReasonSecurityContextConstraints, ReasonQuotaExceeded or
	// ReasonPodsRejected.
	Reason string
	// Final: waiting will not help (a policy refused them, not a shortage).
	Final bool
	// What says which object could not create what: "Job t-node-0 cannot
	// create its pods".
	What string
	// Event is the Warning it was read from.
	Event Warning
}

// Summary quotes the refusal: "Job t-node-0 cannot create its pods
// (FailedCreate, 3 times): Error creating: ...".
func (r *Refusal) Summary() string {
	times := ""
	if r.Event.Count > 1 {
		times = fmt.Sprintf(", %d times", r.Event.Count)
	}
	return fmt.Sprintf("%s (%s%s): %s", r.What, r.Event.Reason, times, r.Event.Message)
}

// Refused classifies one Warning; nil when it is not about an object the
// apiserver refused to create.
func Refused(w Warning) *Refusal {
	r := &Refusal{Reason: api.ReasonPodsRejected, Event: w}
	switch {
	case w.Kind == "Job" && w.Reason == EventFailedCreate:
		r.What = fmt.Sprintf("Job %s cannot create its pods", w.Name)
	case w.Kind == "JobSet" && w.Reason == EventJobCreationFailed:
		r.What = fmt.Sprintf("JobSet %s cannot create its Jobs", w.Name)
	default:
		return nil
	}
	switch m := w.Message; {
	case strings.Contains(m, "violates PodSecurity"):
		r.Reason, r.Final = api.ReasonPodSecurity, true
	case strings.Contains(m, "unable to validate against any security context constraint"):
		r.Reason, r.Final = api.ReasonSecurityContextConstraints, true
	case strings.Contains(m, "exceeded quota"):
		r.Reason = api.ReasonQuotaExceeded
	case strings.Contains(m, " is forbidden: "), strings.Contains(m, " is invalid: "), strings.Contains(m, "denied the request"):
		r.Final = true
	}
	return r
}

// WorstRefusal is the refusal that explains missing pods best: a final one
// outranks one that may pass (quota); among equals the latest wins. Nil when
// no warning is a refusal. Callers ask only while pods are missing: an old
// event must not outlive the pods it was about.
func WorstRefusal(warnings []Warning) *Refusal {
	var best *Refusal
	for _, w := range warnings {
		r := Refused(w)
		if r == nil {
			continue
		}
		if best == nil || (r.Final && !best.Final) || (r.Final == best.Final && w.Last.After(best.Event.Last)) {
			best = r
		}
	}
	return best
}
