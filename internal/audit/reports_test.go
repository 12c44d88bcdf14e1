package audit

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func ref(name string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Namespace: "team-a", Name: name, UID: types.UID("uid-" + name)}
}

func TestContent(t *testing.T) {
	then, now := time.Unix(1000, 0), time.Unix(2000, 0)
	previous := Previous([]reports.ReportResult{
		{Policy: "p", Result: "fail", Description: "same", Timestamp: metav1.Timestamp{Seconds: then.Unix()}, Subjects: []corev1.ObjectReference{ref("a")}},
		{Policy: "p", Result: "fail", Description: "before", Timestamp: metav1.Timestamp{Seconds: then.Unix()}, Subjects: []corev1.ObjectReference{ref("b")}},
		{Policy: "p", Result: "pass", Timestamp: metav1.Timestamp{Seconds: then.Unix()}, Subjects: []corev1.ObjectReference{ref("c")}},
	})
	rs := []Result{
		{Object: ref("a"), Policy: "p", Status: Fail, Message: "same", Field: "spec.trainer", PolicySetVersion: "v2"},
		{Object: ref("b"), Policy: "p", Status: Fail, Message: "after"},
		{Object: ref("c"), Policy: "p", Status: Pass},
		{Object: ref("d"), Policy: "p", Status: Warn, Message: "w", Enforcement: "dryrun"},
		{Object: ref("e"), Policy: "mpiguard", Status: Error, Message: "runtime gone"},
	}
	c := contentOf(rs, previous, now, true)
	type row struct {
		Name, Result, Severity, Message string
		Seconds                         int64
		Properties                      map[string]string
	}
	var got []row
	for _, r := range c.results {
		got = append(got, row{Name: r.Subjects[0].Name, Result: string(*r.Result), Severity: string(*r.Severity), Message: ptr.Deref(r.Description, ""), Seconds: r.Timestamp.Seconds, Properties: r.Properties})
		if *r.Source != Source || !*r.Scored {
			t.Errorf("result of %s: source %q, scored %v", r.Subjects[0].Name, *r.Source, *r.Scored)
		}
	}
	want := []row{
		{Name: "a", Result: "fail", Severity: "high", Message: "same", Seconds: then.Unix(), Properties: map[string]string{PropertyField: "spec.trainer", PropertyPolicySetVersion: "v2"}},
		{Name: "b", Result: "fail", Severity: "high", Message: "after", Seconds: now.Unix()},
		{Name: "c", Result: "pass", Severity: "info", Seconds: then.Unix()},
		{Name: "d", Result: "warn", Severity: "medium", Message: "w", Seconds: now.Unix(), Properties: map[string]string{PropertyEnforcement: "dryrun"}},
		{Name: "e", Result: "error", Severity: "high", Message: "runtime gone", Seconds: now.Unix()},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if c.limits != nil {
		t.Errorf("limits %+v, want none: everything fits", c.limits)
	}
	sum := []int{*c.summary.Pass, *c.summary.Fail, *c.summary.Warn, *c.summary.Error, *c.summary.Skip}
	if diff := cmp.Diff([]int{1, 2, 1, 1, 0}, sum); diff != "" {
		t.Errorf("summary pass/fail/warn/error/skip (-want +got):\n%s", diff)
	}
}

func TestNewly(t *testing.T) {
	previous := Previous([]reports.ReportResult{
		{Policy: "p", Result: "fail", Subjects: []corev1.ObjectReference{ref("failing")}},
		{Policy: "p", Result: "pass", Subjects: []corev1.ObjectReference{ref("passing")}},
	})
	cases := map[string]struct {
		r    Result
		want bool
	}{
		"failed before: not new":         {r: Result{Object: ref("failing"), Policy: "p", Status: Fail}, want: false},
		"passed before: new":             {r: Result{Object: ref("passing"), Policy: "p", Status: Fail}, want: true},
		"not judged before: new":         {r: Result{Object: ref("new"), Policy: "p", Status: Fail}, want: true},
		"another policy of the same job": {r: Result{Object: ref("failing"), Policy: "q", Status: Fail}, want: true},
		"a warning is no violation":      {r: Result{Object: ref("passing"), Policy: "p", Status: Warn}, want: false},
		"a recreated job (new UID) is new": {r: Result{Object: func() corev1.ObjectReference {
			o := ref("failing")
			o.UID = "other"
			return o
		}(), Policy: "p", Status: Fail}, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Newly(tc.r, previous); got != tc.want {
				t.Errorf("Newly = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFit: a namespace with more results than a report may hold keeps its
// violations, leaves the passes out and says so; the summary counts all.
func TestFit(t *testing.T) {
	var rs []Result
	long := strings.Repeat("x", 1000)
	for i := range 3000 {
		st := Pass
		if i%10 == 0 {
			st = Fail
		}
		rs = append(rs, Result{Object: ref(strings.Repeat("j", 20) + string(rune('a'+i%26)) + "-" + strconv.Itoa(i)), Policy: "p", Status: st, Message: long})
	}
	c := contentOf(rs, nil, time.Unix(0, 0), true)
	if c.limits == nil || len(c.limits.StatusFilter) == 0 {
		t.Fatalf("no limits set for %d results", len(rs))
	}
	for _, r := range c.results {
		if *r.Result == "pass" {
			t.Fatalf("a pass was kept")
		}
	}
	if len(c.results) != 300 || *c.summary.Pass != 2700 || *c.summary.Fail != 300 {
		t.Errorf("kept %d results, summary pass %d fail %d; want 300, 2700, 300", len(c.results), *c.summary.Pass, *c.summary.Fail)
	}
}

// TestPassesLeftOutByDefault: without PassResults a report lists only what
// is not a pass, says it was filtered by status, and still counts the
// passes; a namespace whose jobs all pass gets a report with no results.
func TestPassesLeftOutByDefault(t *testing.T) {
	rs := []Result{
		{Object: ref("a"), Policy: "p", Status: Pass},
		{Object: ref("a"), Policy: "q", Status: Fail, Message: "no"},
		{Object: ref("b"), Policy: "p", Status: Pass},
		{Object: ref("b"), Policy: "q", Status: Warn, Message: "hm"},
		{Object: ref("c"), Policy: "mpiguard", Status: Error, Message: "runtime gone"},
	}
	c := contentOf(rs, nil, time.Unix(0, 0), false)
	var got []string
	for _, r := range c.results {
		got = append(got, r.Subjects[0].Name+"/"+*r.Policy+"="+string(*r.Result))
	}
	if diff := cmp.Diff([]string{"a/q=fail", "b/q=warn", "c/mpiguard=error"}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if c.limits == nil || c.limits.MaxResults != nil {
		t.Fatalf("limits %+v, want a status filter and no cut", c.limits)
	}
	if diff := cmp.Diff(violationsOnly, c.limits.StatusFilter); diff != "" {
		t.Errorf("status filter (-want +got):\n%s", diff)
	}
	sum := []int{*c.summary.Pass, *c.summary.Fail, *c.summary.Warn, *c.summary.Error}
	if diff := cmp.Diff([]int{2, 1, 1, 1}, sum); diff != "" {
		t.Errorf("summary pass/fail/warn/error (-want +got):\n%s", diff)
	}

	all := contentOf(rs[:1], nil, time.Unix(0, 0), false)
	if len(all.results) != 0 || *all.summary.Pass != 1 || all.limits == nil {
		t.Errorf("all passing: %d results, summary pass %d, limits %+v; want none listed, 1 counted, a status filter", len(all.results), *all.summary.Pass, all.limits)
	}
}
