package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/spf13/cobra"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

func init() { registerSubcommand(newCheckCommand) }

// exitError carries check's exit code: 1 denied, 2 unreadable or invalid input.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) ExitCode() int { return e.code }

type checkOptions struct {
	liveFlags
	fromCluster bool
	files       []string
	eachFile    bool
	policies    string
	parameters  string
	showPatches bool
	// showNetworkPolicy prints the NetworkPolicy template each job gets.
	showNetworkPolicy bool
	output            string
}

func newCheckCommand() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check -f FILE|DIR [-f ...]",
		Short: "Evaluate TrainJob manifests offline exactly as admission would",
		Long: `check reads manifests (multi-document YAML or JSON; a directory is read
recursively; "-" is standard input). Together they form the cluster: Namespaces,
ResourceQuotas (their status.used honoured), LimitRanges, RuntimeClasses,
ClusterTrainingRuntimes and TrainingRuntimes; mpiguard's curated runtimes
(mpiguard-openmpi, ...) are there too unless the documents define one of the
same name, as mpiguard publishes them in every cluster (a note says when one
is used). Every TrainJob among them is
evaluated as a CREATE in that context, with the same renderer, engine and
policies as the webhooks (the same pipeline function): mutated first, then
validated. A suspended TrainJob (a stored Kueue job) is judged as its resume,
the write that starts its pods and that the quota policies judge; the output
says "judged as its resume". TrainJobs earlier in the input that admission lets through and that
start pods (not suspended) count against quotas, MPI or not.

With --from-cluster the cluster is the live one kubectl would talk to
(--kubeconfig, --context): its runtimes, namespaces, ResourceQuotas with their
usage, what admitted jobs hold (mpiguard's reservations), LimitRanges and
RuntimeClasses, read as the validating webhook reads them (mpiguard's
reservations, when the user may not read them, are left out with a note).
Only the TrainJobs
of the input are used; each is judged on its own, as if submitted now. A
TrainJob without a namespace is in the context's namespace, as with kubectl.
The policies are the embedded ones (or --policies/--parameters), not the ones
a running mpiguard loaded from its ConfigMaps.

With --each-file every file read (each file of a directory, standard input)
is a cluster of its own and its TrainJobs are judged in it alone, as the
policies' samples are written (policies/<policy>/samples/: each file a complete
cluster). Without it, all files form one cluster, and an object in two files
(the Namespace "team-a" of two samples) is an error.

ClusterTrainingRuntimes and TrainingRuntimes among the documents are judged
as the runtime-template webhook judges their create (the same validation):
one the webhook would refuse is DENIED, with its errors; without TrainJobs in
the input, every runtime is listed, with the webhook's warnings.

Exit status: 0 all allowed, 1 any denied (a TrainJob, or a runtime the
webhook would refuse), 2 unreadable or invalid input.`,
		Example: `  mpiguard check -f cluster.yaml -f jobs/
  kubectl get trainjob my-job -o yaml | mpiguard check -f cluster/ -f -
  mpiguard check -f policies/max-duration/samples/ --each-file --show-patches -o json
  mpiguard check --from-cluster -f my-trainjob.yaml
  mpiguard check -f my-runtime.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCheck(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "manifest file or directory to read, - for stdin (repeatable)")
	f.StringVar(&o.policies, "policies", "", policiesFlagUsage)
	f.StringVar(&o.parameters, "parameters", "", parametersFlagUsage)
	f.BoolVar(&o.eachFile, "each-file", false, "judge every file as a cluster of its own (a folder of samples), not all files as one cluster")
	f.BoolVar(&o.showPatches, "show-patches", false, "also print the mutations admission would apply")
	f.BoolVar(&o.showNetworkPolicy, "show-network-policy", false,
		"also print which per-job NetworkPolicy template each MPI TrainJob gets (from its Namespace's and runtime's annotations, the controller's default flags) and what it leaves closed")
	f.StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	f.BoolVar(&o.fromCluster, "from-cluster", false, "judge the TrainJobs in the live cluster kubectl would talk to, not in the documents given")
	o.register(f)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func runCheck(ctx context.Context, o checkOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.output != "text" && o.output != "json" {
		return &exitError{2, fmt.Errorf("--output %q: want text or json", o.output)}
	}
	// The policies compile, and the TrainJob schema's validators are built,
	// while the documents are read (runtimes first, whose validators the
	// reading builds), on the other core: what a check of one TrainJob waits
	// for (BenchmarkCheck). Errors keep their order:
	// the input's first.
	go render.PrepareValidation(trainer.TrainJobKind)
	evaluator := make(chan evaluatorOrError, 1)
	go func() {
		ev, err := evaluatorFromFlags(ctx, o.policies, o.parameters, "mpiguard-check")
		evaluator <- evaluatorOrError{ev, err}
	}()
	clusters, err := o.read(stdin)
	if err != nil {
		return &exitError{2, err}
	}
	// Every document is validated: judging the jobs needs none of the
	// validators, whose memory would otherwise be carried to the end. Their
	// pages and the reading's garbage go back to the system now, before the
	// judging grows the heap: the process's peak memory is what a CI step
	// or a pre-commit hook pays (docs/performance.md, "Offline check").
	render.ForgetValidation()
	debug.FreeOSMemory()
	jobs, runtimes := 0, 0
	for _, cluster := range clusters {
		for _, ignored := range cluster.Ignored {
			fmt.Fprintf(stderr, "note: ignored %s (no decision depends on this kind)\n", ignored)
		}
		jobs += len(cluster.TrainJobs)
		runtimes += len(cluster.ClusterRuntimes) + len(cluster.Runtimes)
	}
	if jobs == 0 && runtimes == 0 {
		return &exitError{2, errors.New("no TrainJob found in the input, nor a ClusterTrainingRuntime or TrainingRuntime to validate")}
	}
	built := <-evaluator
	if built.err != nil {
		return &exitError{2, built.err}
	}
	ev := built.ev
	if o.showNetworkPolicy {
		np := networkpolicies.DefaultOptions()
		ev.NetworkPolicies = &np
	}
	if !o.fromCluster {
		if err := withCurated(clusters); err != nil {
			return &exitError{2, err}
		}
	}
	var results []check.Result
	var sources []string // with --each-file, each result's file, for the text output's headings
	nodesSkipped := false
	for _, cluster := range clusters {
		// Runtime templates first, as the runtime-template webhook would
		// judge their create: the jobs depend on them.
		got, err := check.RuntimeResults(cluster)
		if err != nil {
			return &exitError{2, err}
		}
		results = append(results, got...)
		for range got {
			sources = append(sources, cluster.Source)
		}
		if len(cluster.TrainJobs) == 0 {
			continue
		}
		if o.fromCluster {
			got, err = o.checkInCluster(ctx, ev, cluster, stderr)
		} else {
			got, err = ev.Evaluate(ctx, cluster)
		}
		if err != nil {
			return &exitError{2, err}
		}
		if cluster.DefaultQueueAssumed {
			fmt.Fprintln(stderr, `note: no Volcano Queue is among the documents read: Volcano's own queue "default" (Open, no capability), which its installation creates, is used`)
		}
		nodesSkipped = nodesSkipped || cluster.NodesSkipped
		for _, name := range cluster.CuratedUsed {
			fmt.Fprintf(stderr, "note: ClusterTrainingRuntime %q is not among the documents read: the curated one this binary publishes (runtimes/catalog, as on Kubernetes) is used\n", name)
		}
		results = append(results, got...)
		for range got {
			sources = append(sources, cluster.Source)
		}
	}
	if nodesSkipped {
		// Once, however many clusters (--each-file) were judged without Nodes.
		fmt.Fprintln(stderr, "note: no Node is among the documents read: the node-capacity check was skipped (add the cluster's Nodes: kubectl get nodes -o yaml)")
	}
	if o.output == "json" {
		err = check.WriteJSON(stdout, results)
	} else {
		err = writeText(stdout, results, sources, o.eachFile, o.showPatches)
	}
	if err != nil {
		return &exitError{2, err}
	}
	if code := check.ExitCode(results); code != 0 {
		msg := map[int]string{1: "some TrainJobs are denied", 2: "some TrainJobs could not be evaluated"}[code]
		for _, r := range results {
			if r.Runtime != "" && !r.Allowed && code == 1 {
				msg = "some TrainJobs or runtime templates are denied"
			}
		}
		return &exitError{code, errors.New(msg)}
	}
	return nil
}

type evaluatorOrError struct {
	ev  *check.Evaluator
	err error
}

// withCurated lets the TrainJobs of every cluster name a curated runtime
// without the documents defining it: mpiguard's controller publishes them in
// every cluster.
func withCurated(clusters []*check.Cluster) error {
	curated, err := catalog.Load()
	if err != nil {
		return err
	}
	for _, c := range clusters {
		c.Curated = map[string]*trainer.ClusterTrainingRuntime{}
		for _, rt := range curated {
			c.Curated[rt.Name] = rt.DeepCopy()
		}
	}
	return nil
}

// writeText writes the results as text, with --each-file under a heading
// naming each cluster's file.
func writeText(w io.Writer, results []check.Result, sources []string, eachFile, showPatches bool) error {
	if !eachFile {
		return check.WriteText(w, results, showPatches)
	}
	for i := 0; i < len(results); {
		j := i
		for j < len(results) && sources[j] == sources[i] {
			j++
		}
		if _, err := fmt.Fprintf(w, "== %s\n", sources[i]); err != nil {
			return err
		}
		if err := check.WriteText(w, results[i:j], showPatches); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// read reads the documents of -f: one cluster, or with --each-file one per
// file (standard input is one file).
func (o checkOptions) read(stdin io.Reader) ([]*check.Cluster, error) {
	if !o.eachFile {
		cluster := check.NewCluster()
		for _, f := range o.files {
			if err := cluster.ReadPath(f, stdin); err != nil {
				if errors.Is(err, check.ErrDuplicate) {
					err = fmt.Errorf("%w (if each file is a cluster of its own, as policy samples are, add --each-file)", err)
				}
				return nil, err
			}
		}
		return []*check.Cluster{cluster}, nil
	}
	var clusters []*check.Cluster
	for _, f := range o.files {
		if f == "-" {
			cluster := check.NewCluster()
			cluster.Source = "<stdin>"
			if err := cluster.ReadPath(f, stdin); err != nil {
				return nil, err
			}
			clusters = append(clusters, cluster)
			continue
		}
		files, err := check.Files(f)
		if err != nil {
			return nil, err
		}
		for _, file := range files {
			cluster := check.NewCluster()
			cluster.Source = file
			if err := cluster.ReadFile(file); err != nil {
				return nil, err
			}
			clusters = append(clusters, cluster)
		}
	}
	return clusters, nil
}

// checkInCluster judges the input's TrainJobs in the live cluster.
func (o checkOptions) checkInCluster(ctx context.Context, ev *check.Evaluator, docs *check.Cluster, stderr io.Writer) ([]check.Result, error) {
	if n := len(docs.Namespaces) + len(docs.Quotas) + len(docs.LimitRanges) + len(docs.RuntimeClasses) + len(docs.ClusterRuntimes) + len(docs.Runtimes); n > 0 {
		fmt.Fprintf(stderr, "note: --from-cluster: %d non-TrainJob documents are not used to judge the TrainJobs (the live cluster's objects are; runtimes are still validated as templates)\n", n)
	}
	c, contextNS, err := o.connect()
	if err != nil {
		return nil, err
	}
	for _, s := range docs.TrainJobs {
		if s.Unnamespaced {
			s.TrainJob.Namespace = contextNS
		}
	}
	reads := &audit.SkipForbidden{Reader: c}
	auditor := o.auditor(c, ev)
	auditor.Cluster = pipeline.ClientCluster{Reader: reads, Live: reads}
	ledger := &audit.SkipUnreadable{ReservationReader: auditor.Reservations}
	auditor.Reservations = ledger
	results, err := ev.EvaluateLive(ctx, docs.TrainJobs, auditor.QuotaState)
	for _, note := range []string{reads.Note(), ledger.Note(o.mpiguardNS)} {
		if note != "" {
			fmt.Fprintln(stderr, note)
		}
	}
	return results, err
}

// evaluatorFromFlags runs the policies of --policies/--parameters (the
// embedded ones by default) through the admission pipeline; user names the
// requester in decisions.
func evaluatorFromFlags(ctx context.Context, dir, parametersFile, user string) (*check.Evaluator, error) {
	set, err := policySetFromFlags(dir, parametersFile)
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(ctx, set, engine.Options{})
	if err != nil {
		return nil, err
	}
	rnd, err := render.NewRenderer(ctx)
	if err != nil {
		return nil, err
	}
	return &check.Evaluator{Engine: eng, Renderer: rnd, User: user, SuspendedAsResume: true}, nil
}

// policySetFromFlags returns the embedded policy set with the policies of
// --policies laid over it, as the ConfigMaps are at run time (a module in the
// package of an embedded policy replaces that policy, any other adds one; its
// parameters.yaml is merged over the embedded one), and the parameters of
// --parameters merged over those, as the parameters ConfigMap is.
func policySetFromFlags(dir, parametersFile string) (engine.PolicySet, error) {
	set, err := engine.DefaultPolicySet()
	if err != nil {
		return engine.PolicySet{}, err
	}
	if dir != "" {
		own, err := loadPolicyDir(dir)
		if err != nil {
			return engine.PolicySet{}, err
		}
		// Named by their path, so that a compile error names the user's file.
		modules := map[string]string{}
		for name, src := range own.Modules {
			modules[filepath.Join(dir, name)] = src
		}
		if set, err = set.Overlay(modules, own.Parameters); err != nil {
			return engine.PolicySet{}, err
		}
		maps.Copy(set.Schemas, own.Schemas)
	}
	if parametersFile != "" {
		data, err := os.ReadFile(parametersFile)
		if err != nil {
			return engine.PolicySet{}, err
		}
		params, err := engine.ParseParameters(data)
		if err != nil {
			return engine.PolicySet{}, fmt.Errorf("%s: %w", parametersFile, err)
		}
		set.Parameters = set.Parameters.Merge(params)
	}
	return set, nil
}

const parametersFlagUsage = "parameters YAML merged over the embedded parameters, as the parameters ConfigMap is (exemptNamespaces add to the defaults unless replaceExemptNamespaces: true)"

const policiesFlagUsage = "directory of Rego policies laid over the embedded ones: a policy of the same package replaces an embedded one, others are added (its parameters.yaml, if any, is merged over the embedded parameters)"

// loadPolicyDir reads the policies tree of --policies: its modules, schemas
// and parameters.yaml, if any.
func loadPolicyDir(dir string) (engine.PolicySet, error) {
	params := ""
	if _, err := os.Stat(filepath.Join(dir, "parameters.yaml")); err == nil {
		params = "parameters.yaml"
	}
	set, err := engine.LoadPolicySet(os.DirFS(dir), params)
	if err != nil {
		return engine.PolicySet{}, fmt.Errorf("--policies %s: %w", dir, err)
	}
	return set, nil
}
