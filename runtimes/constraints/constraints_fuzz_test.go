package constraints

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mpiguard/mpiguard/policies"
)

// FuzzParseConstraints reads arbitrary constraint annotations (present picks
// which of the four a runtime has) and checks a job in namespace ns against
// them. For every input: no panic; each annotation present gives its
// constraint or an error about that annotation, and an absent one neither;
// the policy input converts to Rego; what was parsed, written back as
// annotations, parses to the same with no error; and, for a namespace name the
// apiserver accepts, the runtime-constraints policy allows the namespace
// exactly when NamespaceAllowed does (its rule claims path.Match semantics).
func FuzzParseConstraints(f *testing.F) {
	f.Add("8", " 4 ", "pool=gpu, nvidia.com/gpu.present", "team-a,ml-*", uint8(15), "ml-research")
	f.Add("eight", "-1", "bad key!=x", ", ,", uint8(15), "team-a")
	f.Add("0", "0", "a=b=c", "[", uint8(15), "a")
	f.Add("2147483648", "9223372036854775808", "k=", "team-[^a]", uint8(15), "team-b")
	// Classes path.Match and the policy's glob.match read differently (now
	// refused, glob.go).
	f.Add("+3", "007", "example.com/k=v,k2", "team-[!a],*-prod,{a,b}", uint8(12), "team-b")
	f.Add("", "", "", `team-[^a],[]a]*,\[!x`, uint8(8), "team-b")
	f.Add("", "", "", `team-\a,t?am-b,[a-c]*`, uint8(8), "b")
	f.Fuzz(func(t *testing.T, maxWorkers, maxGPUs, labels, namespaces string, present uint8, ns string) {
		annotations := map[string]string{"unrelated": "x"}
		for i, v := range []string{maxWorkers, maxGPUs, labels, namespaces} {
			if present&(1<<i) != 0 {
				annotations[Keys[i]] = v
			}
		}
		c, errs := Parse(annotations)
		failed := map[string]bool{}
		for _, e := range errs {
			key := strings.TrimSuffix(strings.TrimPrefix(e.Field, "metadata.annotations["), "]")
			if _, ok := annotations[key]; !ok || e.Field == key {
				t.Fatalf("error about %s, which is not a constraint annotation present: %v", e.Field, e)
			}
			failed[key] = true
		}
		for key, set := range map[string]bool{
			AnnotationMaxWorkers: c.MaxNodes != nil, AnnotationMaxGPUsPerWorker: c.MaxGPUsPerWorker != nil,
			AnnotationRequiredNodeLabels: len(c.RequiredNodeLabels) > 0, AnnotationAllowedNamespaces: len(c.AllowedNamespaces) > 0,
		} {
			_, isPresent := annotations[key]
			if isPresent != (set || failed[key]) {
				t.Fatalf("%s present %t, but parsed %t and refused %t", key, isPresent, set, failed[key])
			}
		}
		if _, err := ast.InterfaceToValue(PolicyInput(annotations)); err != nil {
			t.Fatalf("the policy input does not convert to Rego: %v", err)
		}
		_ = c.Check(Job{Namespace: ns, RuntimeName: "rt", NumNodes: 3, GPUsPerWorker: 4,
			PodNodeLabels: map[string]map[string]string{"launcher": {"pool": "gpu"}, "worker": nil}})

		again, errs := Parse(annotationsOf(c))
		if len(errs) > 0 {
			t.Fatalf("the constraints parsed, written back, do not parse: %v", errs)
		}
		if diff := cmp.Diff(c, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("written back and parsed again (-first +again):\n%s", diff)
		}

		if len(c.AllowedNamespaces) == 0 || len(validation.IsDNS1123Label(ns)) > 0 {
			return
		}
		if want, got := c.NamespaceAllowed(ns), regoNamespaceAllowed(t, annotations, ns); want != got {
			t.Fatalf("namespace %q with allowed namespaces %q: NamespaceAllowed %t, runtime-constraints policy %t", ns, c.AllowedNamespaces, want, got)
		}
	})
}

func TestGlobProblem(t *testing.T) {
	for pattern, refused := range map[string]bool{
		"team-a": false, "ml-*": false, "t?am-[a-c]": false, "[^a-c]x": false, `\[!x`: false, "[a!]": true, "[^!a]": true, "[abc][0-0]": false,
		"team-[!a]": true, "[^b-0]": true, "[{1]": true, "[A-Z]": true, "[.]": true, "[z-a]": true, `[\!a]`: true, "x[0-9][9-0]": true, "[0-00]": true, "[a-cx]": true, "team[ab-c]x": true,
	} {
		if got := globProblem(pattern) != ""; got != refused {
			t.Errorf("globProblem(%q) refuses %t, want %t", pattern, got, refused)
		}
	}
}

// annotationsOf writes constraints back as the annotations that state them.
func annotationsOf(c Constraints) map[string]string {
	out := map[string]string{}
	if c.MaxNodes != nil {
		out[AnnotationMaxWorkers] = strconv.Itoa(int(*c.MaxNodes))
	}
	if c.MaxGPUsPerWorker != nil {
		out[AnnotationMaxGPUsPerWorker] = strconv.FormatInt(*c.MaxGPUsPerWorker, 10)
	}
	if len(c.RequiredNodeLabels) > 0 {
		var items []string
		for k, v := range c.RequiredNodeLabels {
			if v == "" {
				items = append(items, k)
			} else {
				items = append(items, k+"="+v)
			}
		}
		sort.Strings(items)
		out[AnnotationRequiredNodeLabels] = strings.Join(items, ",")
	}
	if len(c.AllowedNamespaces) > 0 {
		for _, p := range c.AllowedNamespaces {
			if _, err := path.Match(p, ""); err != nil {
				panic(fmt.Sprintf("an invalid glob %q was kept", p))
			}
		}
		out[AnnotationAllowedNamespaces] = strings.Join(c.AllowedNamespaces, ",")
	}
	return out
}

var namespaceRule struct {
	once  sync.Once
	query rego.PreparedEvalQuery
	err   error
}

// regoNamespaceAllowed evaluates the runtime-constraints policy's
// namespace_allowed rule on the constraints the engine gives it.
func regoNamespaceAllowed(t *testing.T, annotations map[string]string, ns string) bool {
	t.Helper()
	namespaceRule.once.Do(func() {
		opts := []func(*rego.Rego){rego.Query("data.mpiguard.policies.runtime_constraints.namespace_allowed")}
		for _, file := range []string{"lib/job.rego", "lib/quantity.rego", "runtime-constraints/runtime_constraints.rego"} {
			src, err := policies.FS.ReadFile(file)
			if err != nil {
				namespaceRule.err = err
				return
			}
			opts = append(opts, rego.Module(file, string(src)))
		}
		namespaceRule.query, namespaceRule.err = rego.New(opts...).PrepareForEval(context.Background())
	})
	if namespaceRule.err != nil {
		t.Fatal(namespaceRule.err)
	}
	input := map[string]any{
		"runtime":  map[string]any{"constraints": PolicyInput(annotations)},
		"trainJob": map[string]any{"namespace": ns},
	}
	rs, err := namespaceRule.query.Eval(context.Background(), rego.EvalInput(input))
	if err != nil {
		t.Fatalf("evaluating namespace_allowed: %v", err)
	}
	return len(rs) == 1 && rs[0].Expressions[0].Value == true
}
