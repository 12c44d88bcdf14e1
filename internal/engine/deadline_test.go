package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A policy that runs past the evaluation deadline is stopped and the request
// fails closed with an error naming the policy (when the engine can tell)
// and the deadline. Only that the call returns is asserted, not how fast:
// hangGuard (10x the deadline) only keeps a broken stop from hanging the
// test.
func TestEvaluationDeadline(t *testing.T) {
	const deadline = 100 * time.Millisecond
	const hangGuard = 10 * deadline
	cases := []struct {
		name    string
		modules map[string]string
		// policy is the policy the error names; "" for the set only.
		policy string
	}{{
		name: "a builtin generating a huge range",
		modules: map[string]string{"slow/slow.rego": `package mpiguard.policies.slow

deny contains "never" if count([x | some x in numbers.range(1, 100000000)]) < 0
`},
		policy: "slow",
	}, {
		name: "nested iteration in the evaluator",
		modules: map[string]string{"slow/slow.rego": `package mpiguard.policies.slow

deny contains "never" if {
	xs := numbers.range(1, 2000)
	count([1 | some a in xs; some b in xs; some c in xs; a + b + c < 0]) > 0
}
`},
		policy: "slow",
	}, {
		name: "a lib helper the policy calls, after a fast policy",
		modules: map[string]string{
			"a-fast/fast.rego": demoPolicy(100),
			"lib/spin.rego": `package mpiguard.lib

spin(n) := count([1 | some a in numbers.range(1, n); some b in numbers.range(1, n)])
`,
			"z-slow/slow.rego": `package mpiguard.policies.z_slow

import data.mpiguard.lib

deny contains "never" if lib.spin(input.job.numNodes * 100000) < 0
`,
		},
		policy: "z-slow",
	}, {
		// Depends only on the parameters: evaluated inside the policy like
		// any other rule, so the policy is named.
		name: "a rule of parameters only",
		modules: map[string]string{"slow/slow.rego": `package mpiguard.policies.slow

limit := count(numbers.range(1, 100000000))

deny contains "too many" if input.job.numNodes > limit
`},
		policy: "slow",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(context.Background(), PolicySet{Modules: tc.modules}, Options{EvalTimeout: deadline})
			if err != nil {
				t.Fatal(err)
			}
			for _, pass := range []string{"Decide", "Mutations"} {
				done := make(chan error, 1)
				go func() {
					var err error
					if pass == "Decide" {
						_, err = e.Decide(context.Background(), request(mpiRequest("a", 2)))
					} else {
						_, err = e.Mutations(context.Background(), request(mpiRequest("a", 2)))
					}
					done <- err
				}()
				select {
				case err = <-done:
				case <-time.After(hangGuard):
					t.Fatalf("%s still running %s after its %s deadline", pass, hangGuard, deadline)
				}
				var de *DeadlineError
				if pass == "Mutations" && tc.policy != "" && err == nil {
					continue // the slow rule is a deny rule, which the mutating pass does not evaluate
				}
				if !errors.As(err, &de) {
					t.Fatalf("%s = %v, want a *DeadlineError", pass, err)
				}
				want := &DeadlineError{PolicySet: e.Version(), Policy: tc.policy, Deadline: deadline}
				if diff := cmp.Diff(want, de); diff != "" {
					t.Errorf("%s: deadline error (-want +got):\n%s", pass, diff)
				}
				if !strings.Contains(err.Error(), "exceeded its evaluation deadline of 100ms") {
					t.Errorf("%s: error %q does not say it exceeded the deadline", pass, err)
				}
			}
		})
	}
}

// The deadline is the engine's: the caller's own cancellation (the
// apiserver giving up) is reported as such, not as a slow policy.
func TestEvaluationDeadlineIsTheEngines(t *testing.T) {
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e.evalTimeout != DefaultEvalTimeout {
		t.Errorf("default evaluation deadline = %s, want %s", e.evalTimeout, DefaultEvalTimeout)
	}
	if d := decide(t, e, mpiRequest("a", 4)); d.Allowed {
		t.Error("4 nodes allowed under a limit of 2")
	}

	slow := PolicySet{Modules: map[string]string{"slow/slow.rego": `package mpiguard.policies.slow

deny contains "never" if count([x | some x in numbers.range(1, 100000000)]) < 0
`}}
	e, err = New(context.Background(), slow, Options{EvalTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = e.Decide(ctx, request(mpiRequest("a", 4)))
	var de *DeadlineError
	if err == nil || errors.As(err, &de) || !strings.Contains(err.Error(), "stopped, the request ended (context deadline exceeded)") {
		t.Errorf("Decide past the caller's deadline = %v, want the caller's context error, not the engine's deadline", err)
	}
}
