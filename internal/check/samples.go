package check

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// The sample suite: every policy folder has samples/ of manifests, each a
// complete cluster (Namespace, quotas, runtime, TrainJobs). A sample's
// expected `mpiguard check --show-patches` output is in a .want file beside it.
// Names say what must happen: allowed-*.yaml must be allowed with no denial;
// denied-*.yaml must contain a TrainJob the folder's own policy denies;
// warned-*.yaml must be allowed, with a TrainJob the folder's own policy
// warns about. Each folder needs an allowed sample and a denied one (a warned
// one for a policy that only warns), so a policy that matches nothing fails.

// SampleCase is the outcome of one sample file.
type SampleCase struct {
	Policy string
	// File is the sample's path in the policies tree; WantFile its golden.
	File, WantFile string
	Got, Want      string
	Failures       []string
	// MissingWant and WantDiffers say the .want file is missing or differs
	// from Got.
	MissingWant, WantDiffers bool
}

// Failed says whether the case failed.
func (c *SampleCase) Failed() bool { return len(c.Failures) > 0 }

// RunSamples evaluates every sample under fsys (a policies tree) with ev,
// and requires samples of every policy whose Rego is in fsys. A
// folder-level problem (no samples of a kind, unknown policy) is reported as a
// case of its own with File set to the folder.
func RunSamples(ctx context.Context, fsys fs.FS, ev *Evaluator) ([]SampleCase, error) {
	dirs, err := fs.Glob(fsys, "*/samples")
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, p := range ev.Engine.Policies() {
		known[p] = true
	}
	// Every policy of the tree needs samples: one without any would pass
	// unnoticed. The embedded policies a tree is laid over (policy test DIR)
	// have theirs in the embedded tree.
	own, err := engine.LoadPolicySet(fsys, "")
	if err != nil {
		return nil, err
	}
	policies, err := own.PolicyNames()
	if err != nil {
		return nil, err
	}
	var cases []SampleCase
	for _, p := range policies {
		if info, err := fs.Stat(fsys, p+"/samples"); err != nil || !info.IsDir() {
			cases = append(cases, SampleCase{Policy: p, File: p, Failures: []string{
				fmt.Sprintf("policy %s has no %s/samples folder: every policy needs allowed and denied samples", p, p),
			}})
		}
	}
	for _, dir := range dirs {
		policy := path.Dir(dir)
		files, err := fs.Glob(fsys, dir+"/*.yaml")
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		folder := SampleCase{Policy: policy, File: dir}
		if !known[policy] {
			folder.Failures = append(folder.Failures, fmt.Sprintf("no policy named %q is loaded: its package must be mpiguard.policies.%s", policy, strings.ReplaceAll(policy, "-", "_")))
		}
		kinds := map[string]int{}
		for _, f := range files {
			c := runSample(ctx, fsys, ev, policy, f)
			kinds[sampleKind(f)]++
			cases = append(cases, c)
		}
		if kinds["allowed"] == 0 {
			folder.Failures = append(folder.Failures, "no allowed-*.yaml sample: every policy needs allowed and denied samples")
		}
		if kinds["denied"]+kinds["warned"] == 0 {
			folder.Failures = append(folder.Failures, "no denied-*.yaml sample (or warned-*.yaml, for a policy that only warns): every policy needs allowed and denied samples")
		}
		if kinds[""] > 0 {
			folder.Failures = append(folder.Failures, "sample names must start with allowed-, denied- or warned-")
		}
		if folder.Failed() {
			cases = append(cases, folder)
		}
	}
	return cases, nil
}

func sampleKind(file string) string {
	base := path.Base(file)
	switch {
	case strings.HasPrefix(base, "allowed-"):
		return "allowed"
	case strings.HasPrefix(base, "denied-"):
		return "denied"
	case strings.HasPrefix(base, "warned-"):
		return "warned"
	}
	return ""
}

func runSample(ctx context.Context, fsys fs.FS, ev *Evaluator, policy, file string) SampleCase {
	c := SampleCase{Policy: policy, File: file, WantFile: strings.TrimSuffix(file, ".yaml") + ".want"}
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		c.Failures = append(c.Failures, err.Error())
		return c
	}
	cluster := NewCluster()
	if err := cluster.Read(file, bytes.NewReader(data)); err != nil {
		c.Failures = append(c.Failures, err.Error())
		return c
	}
	if len(cluster.TrainJobs) == 0 {
		c.Failures = append(c.Failures, "sample has no TrainJob")
		return c
	}
	// As `mpiguard check` judges the file: a runtime the runtime-template
	// webhook would refuse first.
	results, err := RuntimeResults(cluster)
	if err != nil {
		c.Failures = append(c.Failures, err.Error())
		return c
	}
	jobs, err := ev.Evaluate(ctx, cluster)
	if err != nil {
		c.Failures = append(c.Failures, err.Error())
		return c
	}
	results = append(results, jobs...)
	var out bytes.Buffer
	_ = WriteText(&out, results, true)
	c.Got = out.String()

	switch kind := sampleKind(file); kind {
	case "allowed", "warned":
		for _, r := range results {
			if r.Outcome() != Allowed {
				c.Failures = append(c.Failures, fmt.Sprintf("TrainJob %s is %s, want %s", r.TrainJob, r.Outcome(), Allowed))
			}
		}
		if kind == "warned" && !judgedBy(results, policy, engine.EnforceWarn) {
			c.Failures = append(c.Failures, fmt.Sprintf("no TrainJob is warned about by policy %s: the policy matches nothing in its warned sample", policy))
		}
	case "denied":
		if !deniedBy(results, policy) {
			c.Failures = append(c.Failures, fmt.Sprintf("no TrainJob is denied by policy %s: the policy matches nothing in its denied sample", policy))
		}
	}
	for _, r := range results {
		if r.Error != "" {
			c.Failures = append(c.Failures, fmt.Sprintf("TrainJob %s could not be evaluated: %s", r.TrainJob, r.Error))
		}
	}

	want, err := fs.ReadFile(fsys, c.WantFile)
	if err != nil {
		c.Failures = append(c.Failures, fmt.Sprintf("no expected output %s", path.Base(c.WantFile)))
		c.MissingWant = true
		return c
	}
	c.Want = string(want)
	if diff := cmp.Diff(lines(c.Want), lines(c.Got)); diff != "" {
		c.Failures = append(c.Failures, fmt.Sprintf("output differs from %s, line by line (-want +got):\n%s", path.Base(c.WantFile), diff))
		c.WantDiffers = true
	}
	return c
}

// lines splits output into its lines, for a diff that shows whole lines.
func lines(s string) []string { return strings.Split(s, "\n") }

// OnlyWantDiffers says whether the case failed for its .want file alone
// (missing or different): `policy test --update` rewrites that file.
func (c *SampleCase) OnlyWantDiffers() bool {
	return (c.MissingWant || c.WantDiffers) && len(c.Failures) == 1
}

func deniedBy(results []Result, policy string) bool {
	return judgedBy(results, policy, engine.EnforceDeny)
}

func judgedBy(results []Result, policy string, action engine.Enforcement) bool {
	for _, r := range results {
		for _, v := range r.Violations {
			if v.Policy == policy && v.Action == action {
				return true
			}
		}
	}
	return false
}
