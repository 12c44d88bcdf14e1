package pipeline

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/policies"
)

// headingAnchors are the anchors GitHub gives the headings of a markdown
// file: lower case, spaces to hyphens, punctuation other than - and _ dropped.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
				slug.WriteRune(r)
			}
		}
		out[slug.String()] = true
	}
	return out
}

// TestPolicyDocsAnchors: every link a denial ends with goes to a heading
// that exists in docs/, and every embedded policy has one.
func TestPolicyDocsAnchors(t *testing.T) {
	for policy, rel := range PolicyDocs {
		file, anchor, ok := strings.Cut(rel, "#")
		if !ok || anchor == "" {
			t.Errorf("%s: %q has no #anchor", policy, rel)
			continue
		}
		if !headingAnchors(t, filepath.Join("../../docs", file))[anchor] {
			t.Errorf("%s: docs/%s has no heading with anchor #%s", policy, file, anchor)
		}
	}
	dirs, err := fs.ReadDir(policies.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "lib" {
			if _, ok := PolicyDocs[d.Name()]; !ok {
				t.Errorf("policy %s has no docs section in PolicyDocs: its denials would end without one", d.Name())
			}
		}
	}
}

func TestDenialMessageEndsWithDocs(t *testing.T) {
	v := deniedVerdict(
		engine.Violation{Policy: "aggregate-quota", Action: engine.EnforceDeny, Field: "spec.trainer", Message: "needs 12 GPUs"},
		engine.Violation{Policy: "aggregate-quota", Action: engine.EnforceDeny, Field: "spec.trainer", Message: "needs 4 pods"},
		engine.Violation{Policy: "my-own-policy", Action: engine.EnforceDeny, Message: "no"},
	)
	t.Cleanup(func() { SetDocsBaseURL(DefaultDocsBaseURL) })
	SetDocsBaseURL("https://docs.example.com/mpiguard")
	want := "TrainJob team-a/big violates 3 mpiguard policies:" +
		"\n- [aggregate-quota] spec.trainer: needs 12 GPUs" +
		"\n- [aggregate-quota] spec.trainer: needs 4 pods (see https://docs.example.com/mpiguard/quota.md#a-quota-relevant-decision-step-by-step)" +
		"\n- [my-own-policy] no"
	if got := v.DenialMessage(); got != want {
		t.Errorf("message:\n%s\nwant:\n%s", got, want)
	}
	SetDocsBaseURL("")
	if got := v.DenialMessage(); strings.Contains(got, "(see ") {
		t.Errorf("links off, still: %s", got)
	}
	// Every link in a denial is one of PolicyDocs' (checked above).
	SetDocsBaseURL(DefaultDocsBaseURL)
	links := regexp.MustCompile(`\(see ([^)]+)\)`).FindAllStringSubmatch(v.DenialMessage(), -1)
	if len(links) != 1 || !strings.HasPrefix(links[0][1], DefaultDocsBaseURL) {
		t.Errorf("links %v", links)
	}
}

func deniedVerdict(vs ...engine.Violation) *Evaluation {
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "big"}}
	return &Evaluation{Governed: true, TrainJob: job, Decision: &engine.Decision{Violations: vs}}
}
