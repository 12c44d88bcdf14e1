package engine

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// decisionLogEntry is one JSON line of the decision log: what auditors ask for.
type decisionLogEntry struct {
	Time             time.Time   `json:"time"`
	User             string      `json:"user"`
	Namespace        string      `json:"namespace"`
	TrainJob         string      `json:"trainJob"`
	Operation        Operation   `json:"operation"`
	DryRunRequest    bool        `json:"dryRunRequest,omitempty"`
	PolicySetVersion string      `json:"policySetVersion"`
	Allowed          bool        `json:"allowed"`
	Violations       []Violation `json:"violations"`
	Mutations        []Change    `json:"mutations,omitempty"`
	DryRunMutations  []Change    `json:"dryRunMutations,omitempty"`
	LatencySeconds   float64     `json:"latencySeconds"`
}

// decisionLog writes entries as JSON lines; writes are serialised so lines never interleave.
type decisionLog struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newDecisionLog(w io.Writer) *decisionLog {
	if w == nil {
		return nil
	}
	return &decisionLog{enc: json.NewEncoder(w)}
}

func (l *decisionLog) write(e *decisionLogEntry) error {
	if l == nil {
		return nil
	}
	if e.Violations == nil {
		e.Violations = []Violation{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.enc.Encode(e)
}
