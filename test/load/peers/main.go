// Command peers compares `mpiguard check` with `gator test` (Gatekeeper's
// offline tester; make bench-peers builds the version the Makefile pins) on
// the same generated corpus (test/load, checkcorpus.go): 1,000 TrainJobs in
// 10 namespaces with 30 ResourceQuotas, judged by mpiguard's embedded
// policies and by gator with test/load/testdata/gator (four
// ConstraintTemplates for the same concerns). Each round runs every command
// once as a process of its own, in turn, so that both see the same machine;
// the table has the medians of -rounds rounds of wall time, CPU time (user +
// system: steadier than wall on a busy machine) and peak RSS (the kernel's
// rusage), and the ratios to gator. The one-job rows are the start-up
// cost: one TrainJob with the same cluster. mpiguard is measured twice: the
// check-only build (-tags checkonly, bin/mpiguard-check) and the full
// binary; the floor rows are ./floor, OPA and one Rego rule over the same
// documents.
//
//	make bench-peers
//	go run ./test/load/peers -gator /path/to/gator [-rounds 5] [-keep DIR] [-mpiguard BINARY] [-mpiguard-check BINARY]
//
// It is a small program of its own, not a Go benchmark, for the memory
// numbers: a child's peak RSS as Linux reports it is at least its parent's
// at the fork (the exec records the forked memory's high-water mark), and a
// test binary of package load starts at about 100 MiB. The program prints
// its own peak under the table.
package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mpiguard/mpiguard/test/load"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run() error {
	gator := flag.String("gator", "", "the gator binary (required)")
	rounds := flag.Int("rounds", 5, "rounds of every command, alternating")
	keep := flag.String("keep", "", "write the corpus into DIR/corpus and DIR/one and keep it (to profile by hand)")
	prebuilt := flag.String("mpiguard", "", "a full mpiguard binary to measure (an earlier commit's) instead of building this tree's")
	prebuiltCheck := flag.String("mpiguard-check", "", "a check-only mpiguard binary (-tags checkonly) to measure instead of building this tree's; with -mpiguard and without it, the -mpiguard binary is measured in both rows")
	flag.Parse()
	if *gator == "" || *rounds < 1 {
		return errors.New("-gator is required, -rounds must be at least 1")
	}
	tmp, err := os.MkdirTemp("", "mpiguard-peers-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	base := cmp.Or(*keep, tmp)
	corpus, one := filepath.Join(base, "corpus"), filepath.Join(base, "one")
	for _, d := range []string{corpus, one} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := load.WriteCheckCorpus(corpus); err != nil {
		return err
	}
	if err := copyOneJob(corpus, one); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	// The check-only build (-tags checkonly, bin/mpiguard-check) is what
	// the docs give for check; the full binary is measured beside it.
	mpiguard, full := cmp.Or(*prebuiltCheck, *prebuilt), *prebuilt
	for _, b := range []struct {
		bin  *string
		tags string
	}{{&mpiguard, "checkonly"}, {&full, ""}} {
		if *b.bin != "" {
			continue
		}
		*b.bin = filepath.Join(tmp, "mpiguard-"+cmp.Or(b.tags, "full"))
		build := exec.Command("go", "build", "-trimpath", "-tags", b.tags, "-o", *b.bin, "./cmd/mpiguard")
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building mpiguard: %v\n%s", err, out)
		}
	}
	pack := filepath.Join(root, "test/load/testdata/gator")
	// The reference pair: gator without the quota template, the one that
	// reads the other TrainJobs of the namespace (data.inventory) and so
	// costs gator the most; mpiguard runs the same command as in the first.
	noQuota := []string{*gator, "test", "-f", corpus, "-o", "json"}
	for _, f := range []string{"slots-gpus", "max-duration", "runtime"} {
		noQuota = append(noQuota, "-f", filepath.Join(pack, f+".yaml"))
	}
	jobs := load.CheckCorpusJobs
	floor := filepath.Join(tmp, "floor")
	build := exec.Command("go", "build", "-o", floor, "./test/load/peers/floor")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the floor: %v\n%s", err, out)
	}
	// Each mpiguard row is compared with the gator row ref names; the floor
	// rows with gator on the same input.
	commands := []command{
		{name: "mpiguard check, 1,000 jobs", jobs: jobs, ref: 1, args: []string{mpiguard, "check", "-f", corpus, "-o", "json"}},
		{name: "gator test, 1,000 jobs", jobs: jobs, ref: -1, args: []string{*gator, "test", "-f", corpus, "-f", pack, "-o", "json"}},
		{name: "mpiguard check, 1 job", jobs: 1, ref: 3, args: []string{mpiguard, "check", "-f", one, "-o", "json"}},
		{name: "gator test, 1 job", jobs: 1, ref: -1, args: []string{*gator, "test", "-f", one, "-f", pack, "-o", "json"}},
		{name: "mpiguard check, 1,000 jobs", jobs: jobs, ref: 5, args: []string{mpiguard, "check", "-f", corpus, "-o", "json"}},
		{name: "gator test without the quota template, 1,000 jobs", jobs: jobs, ref: -1, args: noQuota},
		{name: "mpiguard check (full binary), 1,000 jobs", jobs: jobs, ref: 1, args: []string{full, "check", "-f", corpus, "-o", "json"}},
		{name: "mpiguard check (full binary), 1 job", jobs: 1, ref: 3, args: []string{full, "check", "-f", one, "-o", "json"}},
		{name: "floor (OPA, one policy), 1 job", jobs: 1, ref: 3, args: []string{floor, "-f", one}},
		{name: "floor (OPA, one policy), 1,000 jobs", jobs: jobs, ref: 1, args: []string{floor, "-f", corpus}},
	}
	for range *rounds {
		for i := range commands {
			if err := commands[i].run(); err != nil {
				return err
			}
		}
	}
	fmt.Printf("mpiguard check vs gator test, medians of %d alternating rounds (%s):\n\n", *rounds, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Printf("| command | wall | CPU | peak RSS | wall / gator | CPU / gator | RSS / gator |\n|---|---|---|---|---|---|---|\n")
	for _, c := range commands {
		fmt.Printf("| %s | %.3f s | %.3f s | %.0f MiB |", c.name, median(c.wall).Seconds(), median(c.cpu).Seconds(), float64(median(c.rss))/1024)
		if c.ref < 0 {
			fmt.Printf(" | | |\n")
			continue
		}
		g := commands[c.ref]
		fmt.Printf(" %.2f× | %.2f× | %.2f× |\n", median(c.wall).Seconds()/median(g.wall).Seconds(),
			median(c.cpu).Seconds()/median(g.cpu).Seconds(), float64(median(c.rss))/float64(median(g.rss)))
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(status)) {
		if strings.HasPrefix(line, "VmHWM:") {
			fmt.Printf("\n(peak RSS of this program, a floor under every row's: %s)\n", strings.Join(strings.Fields(line)[1:], " "))
		}
	}
	return nil
}

// command is one command of the comparison and what its runs measured.
type command struct {
	name string
	jobs int
	ref  int // the index of the command it is compared with, -1 for none
	args []string
	wall []time.Duration
	cpu  []time.Duration // user + system
	rss  []int64         // KiB
}

// run runs the command once, with its output checked: exit status 0 or 1
// (both tools exit 1 when something is denied), as many mpiguard results as
// jobs, and gator violations in the corpus (a run that judged nothing would
// measure nothing).
func (c *command) run() error {
	cmd := exec.Command(c.args[0], c.args[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		return fmt.Errorf("%s: %v\n%s", strings.Join(c.args, " "), err, stderr.String())
	}
	// Only the name of each result is decoded (this program's memory stays
	// small): mpiguard also judges the corpus's runtimes as the
	// runtime-template webhook would, and a job's result names its TrainJob.
	var results []struct {
		TrainJob string `json:"trainJob"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &results); err != nil {
		return fmt.Errorf("%s: output is not a JSON list: %v\n%s", c.name, err, stderr.String())
	}
	judged := 0
	for _, r := range results {
		if r.TrainJob != "" {
			judged++
		}
	}
	gator := strings.HasPrefix(c.name, "gator")
	if !gator && judged != c.jobs || gator && c.jobs > 1 && len(results) == 0 {
		return fmt.Errorf("%s: %d TrainJobs judged of %d", c.name, judged, c.jobs)
	}
	c.wall = append(c.wall, wall)
	c.cpu = append(c.cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	c.rss = append(c.rss, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
	return nil
}

func median[T int64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// copyOneJob writes into dir the corpus' cluster and its first TrainJob:
// what a pre-commit hook or a CI step checking one manifest runs.
func copyOneJob(corpus, dir string) error {
	cluster, err := os.ReadFile(filepath.Join(corpus, "cluster.yaml"))
	if err != nil {
		return err
	}
	jobs, err := os.ReadFile(filepath.Join(corpus, "team-00-trainjobs.yaml"))
	if err != nil {
		return err
	}
	first, _, _ := bytes.Cut(jobs, []byte("\n---\n"))
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), cluster, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "trainjob.yaml"), append(first, '\n'), 0o644)
}

// moduleRoot is the folder of mpiguard's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run from mpiguard's module (go env GOMOD is empty)")
	}
	return filepath.Dir(mod), nil
}
