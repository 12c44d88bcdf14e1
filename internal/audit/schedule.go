package audit

import "time"

// A namespace's audit renders and judges every TrainJob in it and writes its
// Report: on a busy namespace that is CPU the webhooks' decisions compete
// for on the leader. So a namespace is audited once its changes have stopped
// for Options.Debounce (a burst of submits is audited once, after it), and at
// the latest Options.MaxDelay after its first unaudited change (a namespace
// that never rests is still audited that often).

// pending are the changes of one work item not yet audited: when the first
// and the last of them happened.
type pending struct{ first, last time.Time }

// auditDelay is how long the audit of a work item with changes p (nil: none,
// e.g. the interval's re-audit or a policy change) must still wait at now.
func auditDelay(now time.Time, p *pending, opts Options) time.Duration {
	if p == nil {
		return 0
	}
	quiet := opts.Debounce - now.Sub(p.last)
	overdue := opts.MaxDelay - now.Sub(p.first)
	return max(0, min(quiet, overdue))
}

// While the webhooks are answering requests (one started within
// admissionBusy), each judgement of an audit is followed by a pause
// yieldFactor times as long as it took: audit then takes a fifth of the CPU
// it would, leaving the CPU to a burst of submits. An idle cluster is
// audited at full speed.
const (
	admissionBusy = time.Second
	yieldFactor   = 4
)

// yieldFor is the pause after a judgement that took took, at now, when the
// last admission request started at lastAdmission.
func yieldFor(now, lastAdmission time.Time, took time.Duration) time.Duration {
	if lastAdmission.IsZero() || now.Sub(lastAdmission) > admissionBusy {
		return 0
	}
	return yieldFactor * took
}
