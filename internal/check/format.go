package check

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// Outcome words printed per TrainJob.
const (
	Allowed = "ALLOWED"
	Denied  = "DENIED"
	Error   = "ERROR"
)

// Outcome is ALLOWED, DENIED or ERROR.
func (r *Result) Outcome() string {
	switch {
	case r.Error != "":
		return Error
	case r.Allowed:
		return Allowed
	}
	return Denied
}

// WriteText prints results for people: one line per TrainJob with its
// outcome, then every violation (deny, warn, dryrun), the NetworkPolicy the
// job gets when the result says it and, with showPatches, every mutation.
func WriteText(w io.Writer, results []Result, showPatches bool) error {
	var b strings.Builder
	for _, r := range results {
		if r.Runtime != "" {
			fmt.Fprintf(&b, "%s: %s\n", r.Runtime, r.Outcome())
			for _, v := range r.Violations {
				fmt.Fprintf(&b, "  %-6s %s: %s: %s\n", v.Action, v.Policy, v.Field, v.Message)
			}
			continue
		}
		switch {
		case r.Error != "":
			fmt.Fprintf(&b, "TrainJob %s: %s: %s\n", r.TrainJob, Error, r.Error)
			continue
		case !r.Governed:
			fmt.Fprintf(&b, "TrainJob %s: %s (not governed: not an MPI TrainJob, or its namespace is exempt)\n", r.TrainJob, Allowed)
			continue
		}
		fmt.Fprintf(&b, "TrainJob %s: %s%s\n", r.TrainJob, r.Outcome(), judgedAsNote(r.JudgedAs))
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "  %-6s %s: %s: %s\n", v.Action, v.Policy, v.Field, v.Message)
		}
		if r.NetworkPolicy != "" {
			fmt.Fprintf(&b, "  %-6s %s\n", "net", r.NetworkPolicy)
		}
		if showPatches {
			for _, c := range r.Mutations {
				fmt.Fprintf(&b, "  %-6s %s: %s\n", "patch", c.Policy, describeChange(c))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON prints results for machines: a JSON array of Result, indented
// by two spaces, as json.Encoder with SetIndent("", "  ") writes it. It is
// written one result at a time: encoding the whole array at once held the
// whole output twice (encoded, then indented) at the end of a check, where
// its peak memory is.
func WriteJSON(w io.Writer, results []Result) error {
	if len(results) == 0 {
		return json.NewEncoder(w).Encode(results) // null or []
	}
	out := bufio.NewWriter(w)
	sep := "[\n  "
	for i := range results {
		b, err := json.MarshalIndent(&results[i], "  ", "  ")
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(out, "%s%s", sep, b); err != nil {
			return err
		}
		sep = ",\n  "
	}
	if _, err := out.WriteString("\n]\n"); err != nil {
		return err
	}
	return out.Flush()
}

// judgedAsNote says, after a job's outcome, that it was judged as its resume.
func judgedAsNote(judgedAs string) string {
	if judgedAs != JudgedAsResume {
		return ""
	}
	return " (judged as its resume: the job is suspended, and resuming it, as Kueue does to admit it, is the write that starts its pods and that the quota policies judge)"
}

func describeChange(c engine.Change) string {
	value, _ := json.Marshal(c.Value)
	if c.Target == "trainJob" && c.Key != "" {
		return fmt.Sprintf("%s[%s] = %s", c.Field, c.Key, value)
	}
	if c.Target == "trainJob" {
		return fmt.Sprintf("%s = %s", c.Field, value)
	}
	if c.Key != "" {
		return fmt.Sprintf("replicatedJob %s %s[%s] = %s", c.ReplicatedJob, c.Field, c.Key, value)
	}
	return fmt.Sprintf("replicatedJob %s %s = %s", c.ReplicatedJob, c.Field, value)
}

// ExitCode maps outcomes to the exit code: 2 when any input could not be
// evaluated, 1 when any TrainJob is denied, else 0.
func ExitCode(results []Result) int {
	code := 0
	for _, r := range results {
		switch r.Outcome() {
		case Error:
			return 2
		case Denied:
			code = 1
		}
	}
	return code
}
