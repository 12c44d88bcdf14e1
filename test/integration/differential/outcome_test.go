package differential

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// outcome is what a user sees of one TrainJob's admission, from either side.
type outcome struct {
	// TrainJob is "namespace/name".
	TrainJob string
	Allowed  bool
	// Denials and Warnings are violation lines ("[policy] field: message"),
	// sorted: the denial lists deny violations, admission warnings the warn
	// ones.
	Denials  []string
	Warnings []string
	// Error is why the TrainJob could not be evaluated (check's ERROR; the
	// webhook's rejection that is not a policy denial).
	Error string
	// Spec is the admitted TrainJob's spec (JSON form, defaulted, mutated);
	// nil when it is not admitted.
	Spec map[string]any
}

func (o outcome) sorted() outcome {
	slices.Sort(o.Denials)
	slices.Sort(o.Warnings)
	return o
}

// specOf is a TrainJob's spec in JSON form. Runtime patch times are left
// out: the Trainer's webhook sets them and they say when, not what.
func specOf(tj *trainer.TrainJob) map[string]any {
	spec := tj.Spec.DeepCopy()
	for i := range spec.RuntimePatches {
		spec.RuntimePatches[i].Time = nil
	}
	var m map[string]any
	if err := roundTrip(spec, &m); err != nil {
		panic(err) // a TrainJobSpec always marshals
	}
	return m
}

// text words outcomes like `mpiguard check --show-patches` does, one line per
// violation and the admitted spec as indented JSON, so that a difference
// shows as a line diff.
func text(outcomes []outcome) string {
	var b strings.Builder
	for _, o := range outcomes {
		switch {
		case o.Error != "":
			fmt.Fprintf(&b, "TrainJob %s: ERROR: %s\n", o.TrainJob, o.Error)
		case o.Allowed:
			fmt.Fprintf(&b, "TrainJob %s: ALLOWED\n", o.TrainJob)
		default:
			fmt.Fprintf(&b, "TrainJob %s: DENIED\n", o.TrainJob)
		}
		for _, d := range o.Denials {
			fmt.Fprintf(&b, "  deny  %s\n", d)
		}
		for _, w := range o.Warnings {
			fmt.Fprintf(&b, "  warn  %s\n", w)
		}
		if o.Spec != nil {
			spec, _ := json.MarshalIndent(o.Spec, "    ", "  ")
			fmt.Fprintf(&b, "  spec  %s\n", spec)
		}
	}
	return b.String()
}

// lineDiff is a line diff of want and got ("- " only in want, "+ " only in
// got, "  " in both, three lines of context around each change), or "" when
// they are equal. Unlike cmp.Diff it never shortens a line, so a differing
// message is shown whole. Each TrainJob's verdict line is kept as context,
// so every change shows which TrainJob it belongs to.
func lineDiff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := strings.Split(want, "\n"), strings.Split(got, "\n")
	// lcs[i][j] is the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var lines []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, "  "+a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, "- "+a[i])
			i++
		default:
			lines = append(lines, "+ "+b[j])
			j++
		}
	}
	const context = 3
	near := make([]bool, len(lines))
	for k, l := range lines {
		if l[0] != ' ' {
			for m := max(0, k-context); m <= min(len(lines)-1, k+context); m++ {
				near[m] = true
			}
		}
	}
	var out strings.Builder
	skipped := false
	for k, l := range lines {
		if near[k] || strings.HasPrefix(l, "  TrainJob ") {
			if skipped {
				out.WriteString("  ...\n")
			}
			out.WriteString(l + "\n")
			skipped = false
		} else {
			skipped = true
		}
	}
	return out.String()
}
