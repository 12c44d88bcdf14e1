package differential

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

var (
	// seed draws the random clusters: MPIGUARD_DIFF_SEED, else a new one each run.
	seed = framework.EnvInt("MPIGUARD_DIFF_SEED", int64(rand.Uint32()))
	// randomCases is how many random clusters run: MPIGUARD_DIFF_N, default 300.
	randomCases = int(framework.EnvInt("MPIGUARD_DIFF_N", 300))
)

var _ = Describe("mpiguard check and the webhooks through the apiserver", func() {
	// Samples run one after another with their own names (team-a, openmpi, ...):
	// each deletes what it created when it ends.
	DescribeTable("agree on every policy sample and every difference found before", func(ctx context.Context, file string) {
		data, err := os.ReadFile(file)
		Expect(err).NotTo(HaveOccurred())
		rel, _ := filepath.Rel(framework.RepoRoot(), file)
		compare(ctx, rel, string(data), true, "")
	}, sampleEntries())

	// Each random cluster has its own namespace and name prefix, so nothing
	// needs deleting; pool runtimes were created once (BeforeSuite).
	DescribeTable("agree on random clusters", func(ctx context.Context, i int) {
		docs := randomCluster(i)
		compare(ctx, fmt.Sprintf("random %d", i), docs, false,
			fmt.Sprintf("replay: MPIGUARD_DIFF_SEED=%d go test ./test/integration/differential/ -ginkgo.focus 'random %d$'", seed, i))
	}, randomEntries())
})

// sampleEntries is one entry per policies/*/samples/*.yaml, and one per
// testdata/*.yaml: differences this suite found, kept as cases.
func sampleEntries() []TableEntry {
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "policies", "*", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		panic(fmt.Sprintf("no policy samples found: %v", err))
	}
	var entries []TableEntry
	for _, f := range files {
		entries = append(entries, Entry(fmt.Sprintf("sample %s/%s", filepath.Base(filepath.Dir(filepath.Dir(f))), filepath.Base(f)), f))
	}
	found, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		panic(err)
	}
	for _, f := range found {
		abs, _ := filepath.Abs(f)
		entries = append(entries, Entry("found "+filepath.Base(f), abs))
	}
	return entries
}

func randomEntries() []TableEntry {
	entries := make([]TableEntry, randomCases)
	for i := range entries {
		entries[i] = Entry(fmt.Sprintf("random %d", i), i)
	}
	return entries
}

// randomCluster is random case i of the seed: its own namespace
// (team-rNNN, which the generator's "team-*" namespace globs match) and its
// own prefix for cluster-scoped names.
func randomCluster(i int) string {
	GinkgoHelper()
	pool, err := fixtures.RuntimePool()
	Expect(err).NotTo(HaveOccurred())
	return fixtures.RandomCluster(rand.New(rand.NewPCG(uint64(seed), uint64(i))), pool, fixtures.RandomClusterOptions{
		Namespace:   fmt.Sprintf("team-r%03d", i),
		Prefix:      fmt.Sprintf("r%03d-gen-", i),
		MaxNumNodes: render.MaxNumNodes,
	})
}

// compare runs the documents through check and through the apiserver and
// fails with a diff naming the case when any TrainJob's outcome differs.
func compare(ctx context.Context, name, docs string, cleanup bool, replay string) {
	GinkgoHelper()
	want, mutated := viaCheck(ctx, name, docs)
	got := viaWebhook(ctx, name, docs, cleanup)
	if diff := lineDiff(text(want), text(got)); diff != "" {
		Fail(fmt.Sprintf("%s: `mpiguard check` (-) and admission through the apiserver (+) differ:\n%s\n%s\ndocuments:\n%s", name, diff, replay, docs))
	}
	count(want, mutated)
}

// tally counts the outcomes the cases agreed on, so a run shows it compared
// more than one kind of outcome.
var tally struct {
	jobs, allowed, mutated, denied, warned, errored int
}

func count(outcomes []outcome, mutated int) {
	tally.mutated += mutated
	for _, o := range outcomes {
		tally.jobs++
		switch {
		case o.Error != "":
			tally.errored++
		case o.Allowed:
			tally.allowed++
		default:
			tally.denied++
		}
		if len(o.Warnings) > 0 {
			tally.warned++
		}
	}
}

var _ = AfterSuite(func() {
	fmt.Printf("differential: agreed on %d TrainJobs: %d allowed (%d mutated), %d denied, %d with warnings, %d not evaluable (seed %d)\n",
		tally.jobs, tally.allowed, tally.mutated, tally.denied, tally.warned, tally.errored, seed)
	// A full run that compared only one kind of outcome proves little: the
	// generator or the comparison lost its reach.
	if randomCases >= 100 && tally.jobs >= randomCases {
		Expect(tally.allowed).To(BeNumerically(">", 0), "no TrainJob was allowed (seed %d)", seed)
		Expect(tally.mutated).To(BeNumerically(">", 0), "no admitted TrainJob was mutated (seed %d)", seed)
		Expect(tally.denied).To(BeNumerically(">", 0), "no TrainJob was denied (seed %d)", seed)
		Expect(tally.warned).To(BeNumerically(">", 0), "no TrainJob got a warning (seed %d)", seed)
	}
})
