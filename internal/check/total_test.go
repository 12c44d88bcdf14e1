package check

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The totality property: no input the apiserver accepts makes a
// policy fail. TestPoliciesAreTotal writes random but valid clusters —
// Namespace labels and annotations the policies read, curated and upstream
// runtimes and generated ones, ResourceQuotas with scopes and hard/used
// amounts, LimitRanges, RuntimeClasses, TrainJobs of every size — as the YAML
// `mpiguard check -f` reads (fixtures.RandomCluster, which the differential
// suite test/integration/differential shares), and evaluates them exactly as
// check does. Every TrainJob must get an evaluation.
//
// The run is deterministic: case i uses seed -total.seed + i. A failure names
// the case's seed; rerun just it with
//
//	go test ./internal/check -run TestPoliciesAreTotal -total.seed=<seed> -total.n=1 -v
//
// For longer runs: -total.n=100000 or MPIGUARD_TOTAL_N=100000.
var (
	totalN    = flag.Int("total.n", envInt("MPIGUARD_TOTAL_N", 2000), "random clusters TestPoliciesAreTotal evaluates")
	totalSeed = flag.Int64("total.seed", int64(envInt("MPIGUARD_TOTAL_SEED", 20240612)), "seed of TestPoliciesAreTotal's first case")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

func TestPoliciesAreTotal(t *testing.T) {
	ev := checkEvaluator(t)
	pool, err := fixtures.RuntimePool()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	var jobs, governed, denied, allowed int
	for i := range *totalN {
		seed := *totalSeed + int64(i)
		docs := fixtures.RandomCluster(rand.New(rand.NewPCG(uint64(seed), 0x6d7069)), pool, fixtures.RandomClusterOptions{MaxNumNodes: render.MaxNumNodes})
		failf := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("case seed %d (rerun: -total.seed=%d -total.n=1): %s\ninput:\n%s", seed, seed, fmt.Sprintf(format, args...), docs)
		}
		// Read and evaluate as runCheck (cmd/mpiguard/check.go) does.
		c := NewCluster()
		if err := c.Read("random.yaml", strings.NewReader(docs)); err != nil {
			failf("the document reader refuses valid input: %v", err)
		}
		results, err := ev.Evaluate(ctx, c)
		if err != nil {
			failf("Evaluate: %v", err)
		}
		if len(results) != len(c.TrainJobs) || len(results) == 0 {
			failf("%d results for %d TrainJobs", len(results), len(c.TrainJobs))
		}
		for _, r := range results {
			jobs++
			if r.Error != "" {
				failf("TrainJob %s has no evaluation: %s", r.TrainJob, r.Error)
			}
			deny := 0
			for _, v := range r.Violations {
				if v.Policy == "" || v.Message == "" || v.Field == "" {
					failf("TrainJob %s: violation without a policy, field or message: %+v", r.TrainJob, v)
				}
				if v.Action == engine.EnforceDeny {
					deny++
				}
			}
			if r.Allowed != (deny == 0) {
				failf("TrainJob %s: allowed %t with %d denials %v", r.TrainJob, r.Allowed, deny, r.Violations)
			}
			switch {
			case !r.Governed:
			case r.Allowed:
				governed++
				allowed++
			default:
				governed++
				denied++
			}
		}
		if code := ExitCode(results); code != 0 && code != 1 {
			failf("check would exit %d", code)
		}
	}
	t.Logf("%d clusters, %d TrainJobs (%d governed: %d allowed, %d denied) in %v",
		*totalN, jobs, governed, allowed, denied, time.Since(start).Round(time.Millisecond))
	// A generator that only produces denials (or only allowed jobs) proves little.
	if *totalN >= 200 && (allowed < *totalN/50 || denied < *totalN/50) {
		t.Errorf("the generator is lopsided: %d allowed, %d denied", allowed, denied)
	}
}

// checkEvaluator is the evaluator runCheck builds with no flags: the embedded
// policies and parameters, the renderer, user mpiguard-check. The engine and
// renderer are fuzzEvaluator's, built once per test process.
func checkEvaluator(t *testing.T) *Evaluator {
	t.Helper()
	ev := *fuzzEvaluator(t)
	ev.User = "mpiguard-check"
	return &ev
}
