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

// decisionLog writes entries as JSON lines, one write per line, so lines never
// interleave. Each entry is encoded before the lock is taken: concurrent
// decisions only queue for the write itself.
type decisionLog struct {
	mu sync.Mutex
	w  io.Writer
}

func newDecisionLog(w io.Writer) *decisionLog {
	if w == nil {
		return nil
	}
	return &decisionLog{w: w}
}

func (l *decisionLog) write(e *decisionLogEntry) error {
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
