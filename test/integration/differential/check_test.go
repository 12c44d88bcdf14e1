package differential

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
)

// checker is `mpiguard check` with no flags (cmd/mpiguard/check.go,
// runCheck): the embedded policies and parameters, the renderer; but for a
// suspended TrainJob, which check judges as its resume, it judges the CREATE
// the webhooks are asked here (SuspendedAsResume false). The resume is
// compared with admission in test/integration/audit.
var checker *check.Evaluator

func newChecker(ctx context.Context) *check.Evaluator {
	GinkgoHelper()
	set, err := engine.DefaultPolicySet()
	Expect(err).NotTo(HaveOccurred())
	eng, err := engine.New(ctx, set, engine.Options{})
	Expect(err).NotTo(HaveOccurred())
	rnd, err := render.NewRenderer(ctx)
	Expect(err).NotTo(HaveOccurred())
	return &check.Evaluator{Engine: eng, Renderer: rnd, User: "mpiguard-check"}
}

// viaCheck reads the documents and evaluates them as `mpiguard check
// --show-patches` does, one outcome per TrainJob in document order, and says
// how many allowed TrainJobs check mutates.
func viaCheck(ctx context.Context, source, docs string) (out []outcome, mutated int) {
	GinkgoHelper()
	c := check.NewCluster()
	Expect(c.Read(source, strings.NewReader(docs))).To(Succeed(), "check refuses the case's documents")
	inputs := make([]*trainer.TrainJob, len(c.TrainJobs))
	for i, s := range c.TrainJobs {
		inputs[i] = s.TrainJob.DeepCopy() // as read: Evaluate defaults c in place
	}
	results, err := checker.Evaluate(ctx, c)
	Expect(err).NotTo(HaveOccurred())
	Expect(results).To(HaveLen(len(inputs)))
	out = make([]outcome, len(results))
	for i, r := range results {
		o := outcome{TrainJob: r.TrainJob, Allowed: r.Error == "" && r.Allowed, Error: r.Error}
		for _, v := range r.Violations {
			// dryrun violations are only recorded: the apiserver's client never sees them.
			switch v.Action {
			case engine.EnforceDeny:
				o.Denials = append(o.Denials, violationLine(v))
			case engine.EnforceWarn:
				o.Warnings = append(o.Warnings, violationLine(v))
			}
		}
		if o.Allowed {
			tj := inputs[i].DeepCopy()
			Expect(render.ApplyDefaults(tj)).To(Succeed())
			Expect(applyChanges(tj, r.Mutations)).To(Succeed(), "check's mutations of %s", r.TrainJob)
			o.Spec = specOf(tj)
			if len(r.Mutations) > 0 {
				mutated++
			}
		}
		out[i] = o.sorted()
	}
	return out, mutated
}

// violationLine is a violation as the webhook words it in its denial and
// its warnings ("[policy] field: message").
func violationLine(v engine.Violation) string {
	if v.Field == "" {
		return fmt.Sprintf("[%s] %s", v.Policy, v.Message)
	}
	return fmt.Sprintf("[%s] %s: %s", v.Policy, v.Field, v.Message)
}

// applyChanges applies check's mutations (what --show-patches prints, one
// change per line) to the defaulted TrainJob, independently of the engine's
// own code: the default deadline when none is set, and pod-template fields
// gathered into mpiguard's runtimePatches entry (replaced when the job has
// one, else appended last), its replicated jobs by name.
func applyChanges(tj *trainer.TrainJob, changes []engine.Change) error {
	pods := map[string]map[string]any{}
	for _, c := range changes {
		switch c.Target {
		case "trainJob":
			if c.Field == "metadata.labels" { // a label the job lacks, added
				v, ok := c.Value.(string)
				if !ok || c.Key == "" {
					return fmt.Errorf("TrainJob label change without a key or a string value: %+v", c)
				}
				if _, set := tj.Labels[c.Key]; !set {
					if tj.Labels == nil {
						tj.Labels = map[string]string{}
					}
					tj.Labels[c.Key] = v
				}
				continue
			}
			if c.Field != "spec.activeDeadlineSeconds" {
				return fmt.Errorf("unknown TrainJob field %q", c.Field)
			}
			var n int64
			if err := roundTrip(c.Value, &n); err != nil {
				return fmt.Errorf("%s: %w", c.Field, err)
			}
			if tj.Spec.ActiveDeadlineSeconds == 0 {
				tj.Spec.ActiveDeadlineSeconds = n
			}
		case "podTemplate":
			if pods[c.ReplicatedJob] == nil {
				pods[c.ReplicatedJob] = map[string]any{}
			}
			path := strings.Split(c.Field, ".")
			if c.Key != "" {
				path = append(path, c.Key)
			}
			setPath(pods[c.ReplicatedJob], path, c.Value)
		default:
			return fmt.Errorf("unknown target %q", c.Target)
		}
	}
	if len(pods) == 0 {
		return nil
	}
	var rjs []any
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		rjs = append(rjs, map[string]any{"name": name, "template": map[string]any{"spec": map[string]any{"template": pods[name]}}})
	}
	var entry trainer.RuntimePatch
	if err := roundTrip(map[string]any{
		"manager":             engine.AdmissionManager,
		"trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"replicatedJobs": rjs}}},
	}, &entry); err != nil {
		return err
	}
	for i := range tj.Spec.RuntimePatches {
		if tj.Spec.RuntimePatches[i].Manager == engine.AdmissionManager {
			tj.Spec.RuntimePatches[i] = entry
			return nil
		}
	}
	tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, entry)
	return nil
}

func setPath(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// roundTrip converts in to out through JSON.
func roundTrip(in, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
