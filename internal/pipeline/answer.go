package pipeline

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// DenialMessage lists every denying violation of a denied evaluation: what,
// why and how to fix it come from the policies; the policy name and field
// path say where. The webhook answers with it and `mpiguard check` shows
// the same lines. Each policy's last line ends with the docs section that
// explains its denials (DocsLink).
func (v *Evaluation) DenialMessage() string {
	if v.Decision == nil {
		return ""
	}
	vs := v.Decision.Denials()
	var b strings.Builder
	fmt.Fprintf(&b, "TrainJob %s/%s violates %d mpiguard polic%s:", v.TrainJob.Namespace, v.TrainJob.Name, len(vs), plural(len(vs), "y", "ies"))
	for i, x := range vs {
		b.WriteString("\n- ")
		b.WriteString(ViolationLine(x))
		// The last line of each policy's denials ends with its docs
		// (doclinks.go): once per policy keeps the message short.
		if last := i == len(vs)-1 || vs[i+1].Policy != x.Policy; last {
			b.WriteString(WithDocsLink(x.Policy, ""))
		}
	}
	return b.String()
}

// Warnings are the warn violations of the evaluation as admission warnings.
func (v *Evaluation) Warnings() []string {
	if v.Decision == nil {
		return nil
	}
	var out []string
	for _, x := range v.Decision.Warnings() {
		out = append(out, ViolationLine(x))
	}
	return out
}

// ViolationLine is how one violation reads: "[policy] field: message".
func ViolationLine(v engine.Violation) string {
	if v.Field == "" {
		return fmt.Sprintf("[%s] %s", v.Policy, v.Message)
	}
	return fmt.Sprintf("[%s] %s: %s", v.Policy, v.Field, v.Message)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// deferDenials turns the denials of an update to a job that stays suspended
// into warnings that say so. Such a job runs nothing, and its resume is
// judged in full (jobstate.StartsPods), so what a policy denies is denied then. Until
// then nothing blocks updates of a suspended job: Kueue, after suspending a
// job it preempts, resets its own runtime patch in a second update, which a
// policy tightened since the job was admitted must not refuse. The user hears
// now what the resume will be told.
//
// Except an entry posing as mpiguard's (policy mpiguard-entry): once stored,
// the resume would compare against it and take it for mpiguard's own.
func deferDenials(d *engine.Decision) {
	d.Allowed = true
	for i := range d.Violations {
		v := &d.Violations[i]
		switch {
		case v.Action != engine.EnforceDeny:
		case v.Policy == mpiguardEntryPolicy:
			d.Allowed = false
		default:
			v.Action = engine.EnforceWarn
			v.Message = "denied when the job is resumed: " + v.Message
		}
	}
}

// mpiguardEntryPolicy judges entries under mpiguard's runtime-patch manager.
const mpiguardEntryPolicy = "mpiguard-entry"

// MaxEventNote is the apiserver's limit on an event's note (events.k8s.io/v1):
// an event with a longer one is refused, and nobody sees it.
const MaxEventNote = 1024

// EventNote is note cut to MaxEventNote, on a UTF-8 boundary, ending with
// "… (cut; the full text is <where>)" when it had to be cut: a denial that
// lists every pod template's Pod Security reasons easily runs longer.
func EventNote(note, where string) string {
	return Cut(note, MaxEventNote, "… (cut; the full text is "+where+")")
}

// Cut is s when it is at most n bytes long; otherwise its start, cut on a
// UTF-8 boundary, followed by tail, n bytes at most in all.
func Cut(s string, n int, tail string) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len(tail), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}
