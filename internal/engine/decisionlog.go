package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

// DecisionLogEntry is one JSON line of the decision log: what auditors ask
// for. docs/audit.md ("Decision log") documents it field by field and
// TestDecisionLogSchema fails when a field is renamed, added or removed
// without the docs.
type DecisionLogEntry struct {
	Time time.Time `json:"time"`
	User string    `json:"user"`
	// Kind is what the request was about: TrainJob, TrainingRuntime or
	// ClusterTrainingRuntime (the last two for deletions only).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	TrainJob  string `json:"trainJob,omitempty"`
	// Runtime names the deleted TrainingRuntime or ClusterTrainingRuntime.
	Runtime          string      `json:"runtime,omitempty"`
	Operation        Operation   `json:"operation"`
	DryRunRequest    bool        `json:"dryRunRequest,omitempty"`
	PolicySetVersion string      `json:"policySetVersion"`
	Allowed          bool        `json:"allowed"`
	Violations       []Violation `json:"violations"`
	Mutations        []Change    `json:"mutations,omitempty"`
	DryRunMutations  []Change    `json:"dryRunMutations,omitempty"`
	LatencySeconds   float64     `json:"latencySeconds"`
	// Phase and Reservation are what a deleted TrainJob held: its phase
	// (Phase), and its entry in its namespace's QuotaReservation.
	Phase       string                     `json:"phase,omitempty"`
	Reservation *v1alpha1.ReservationEntry `json:"reservation,omitempty"`
	// Input is the policy input document the decision was made on, at
	// verbosity LogInput only (its parameters left out: they are the
	// policy set's, named by policySetVersion).
	Input json.RawMessage `json:"input,omitempty"`
}

// Delete is the operation of a deletion (Engine.RecordDeletion).
const Delete Operation = "DELETE"

// Verbosity says which decisions the decision log records.
type Verbosity string

const (
	// LogDenials records denied requests only.
	LogDenials Verbosity = "denials"
	// LogDecisions records every decision, and every deletion (the default).
	LogDecisions Verbosity = "decisions"
	// LogInput records every decision with the policy input it was made on.
	LogInput Verbosity = "input"
)

// Verbosities are the accepted values of --decision-log-verbosity.
var Verbosities = []Verbosity{LogDenials, LogDecisions, LogInput}

// ParseVerbosity reads a --decision-log-verbosity value; "" is LogDecisions.
func ParseVerbosity(s string) (Verbosity, error) {
	if s == "" {
		return LogDecisions, nil
	}
	for _, v := range Verbosities {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("decision log verbosity %q: want one of %v", s, Verbosities)
}

// records says whether an entry that is allowed (or a deletion) is written.
func (v Verbosity) records(allowed bool) bool { return !allowed || v != LogDenials }

// decisionLog writes entries as JSON lines, one write per line, so lines never
// interleave. Each entry is encoded before the lock is taken: concurrent
// decisions only queue for the write itself.
type decisionLog struct {
	mu        sync.Mutex
	w         io.Writer
	verbosity Verbosity
}

func newDecisionLog(w io.Writer, v Verbosity) *decisionLog {
	if w == nil {
		return nil
	}
	if v == "" {
		v = LogDecisions
	}
	return &decisionLog{w: w, verbosity: v}
}

func (l *decisionLog) write(e *DecisionLogEntry) error {
	if l == nil {
		return nil
	}
	if e.Violations == nil {
		e.Violations = []Violation{}
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(line, '\n'))
	return err
}

// inputJSON is the policy input of req as JSON, without parameters; nil
// when it cannot be encoded (the entry is written without it).
func inputJSON(req *Request) json.RawMessage {
	v, err := ast.JSON(req.Input.Value(nil, req.Input.Entries()))
	if err != nil {
		return nil
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "parameters")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// Deletion is a DELETE of a TrainJob or a runtime, as the deletion webhook
// observed it (webhooks/deletes).
type Deletion struct {
	User string
	// Kind is TrainJob, TrainingRuntime or ClusterTrainingRuntime.
	Kind      string
	Namespace string
	Name      string
	DryRun    bool
	// Phase and Reservation: what a deleted TrainJob held.
	Phase       string
	Reservation *v1alpha1.ReservationEntry
}

// RecordDeletion writes a deletion to the decision log (verbosity
// LogDecisions and LogInput): deletions are never denied by mpiguard.
func (e *Engine) RecordDeletion(d Deletion) error {
	if e.log == nil || !e.log.verbosity.records(true) {
		return nil
	}
	entry := &DecisionLogEntry{
		Time: e.now().UTC(), User: d.User, Kind: d.Kind, Namespace: d.Namespace,
		Operation: Delete, DryRunRequest: d.DryRun, Allowed: true,
		PolicySetVersion: e.Version(),
		Phase:            d.Phase, Reservation: d.Reservation,
	}
	if d.Kind == "TrainJob" {
		entry.TrainJob = d.Name
	} else {
		entry.Runtime = d.Name
	}
	return e.log.write(entry)
}
