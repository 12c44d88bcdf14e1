package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	reportsapply "github.com/openreports/reports-api/pkg/client/applyconfiguration/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reports: one openreports.io Report per namespace and one ClusterReport for
// the ClusterTrainingRuntimes, each named ReportName and written whole on
// every audit with server-side apply (field owner FieldOwner): the results
// of an object deleted since are simply not in the next write, so they
// vanish. A namespace's Report lives in that namespace and is owned by the
// Namespace, so it goes with it.
const (
	ReportName = "mpiguard"
	// Source is the report's and every result's source: tools that read
	// reports (Policy Reporter, Kyverno's CLI) group by it.
	Source = "mpiguard"
	// FieldOwner is the field manager of audit's writes.
	FieldOwner = "mpiguard-audit"
	// LabelManagedBy marks the reports audit writes.
	LabelManagedBy = "app.kubernetes.io/managed-by"
)

// Result properties.
const (
	PropertyPolicySetVersion = "policySetVersion"
	PropertyField            = "field"
	PropertyEnforcement      = "enforcement"
)

// maxReportBytes bounds the results a report carries, well below etcd's
// 1.5 MiB object limit: past it pass results are left out (the summary still
// counts them), then the rest is cut (configuration.limits says so).
const maxReportBytes = 1 << 20

// violationsOnly is the status filter of a report that lists no passes: the
// standard way (configuration.limits.statusFilter) to tell a reader that a
// job missing from the results passed every policy, not that it was not
// judged (the summary counts the passes).
var violationsOnly = []reports.StatusFilter{reports.StatusFilter(Fail), reports.StatusFilter(Warn), reports.StatusFilter(Error)}

// severities: a denial is high (admission refuses it), a warning medium,
// a pass informational; an object that could not be judged is refused at
// admission too: high.
var severities = map[Status]reports.ResultSeverity{
	Fail: "high", Error: "high", Warn: "medium", Pass: "info",
}

// resultKey identifies a result across audits: the same object (by UID) and
// policy.
func resultKey(ref corev1.ObjectReference, policy string) string {
	return string(ref.UID) + "/" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name + "/" + policy
}

// Previous indexes a report's results by object and policy, to keep a
// result's timestamp while it holds and to tell what newly fails.
func Previous(rs []reports.ReportResult) map[string]reports.ReportResult {
	out := make(map[string]reports.ReportResult, len(rs))
	for _, r := range rs {
		if len(r.Subjects) == 1 {
			out[resultKey(r.Subjects[0], r.Policy)] = r
		}
	}
	return out
}

// Newly says whether r is a violation that previous did not have: the
// object passed, or was not judged, last time.
func Newly(r Result, previous map[string]reports.ReportResult) bool {
	if !r.Violates() {
		return false
	}
	before, ok := previous[resultKey(r.Object, r.Policy)]
	return !ok || before.Result != reports.Result(Fail)
}

// content is what a report holds: results, their summary, and the limits
// applied when they did not all fit.
type content struct {
	results []reportsapply.ReportResultApplyConfiguration
	summary *reportsapply.ReportSummaryApplyConfiguration
	limits  *reportsapply.LimitsApplyConfiguration
}

// contentOf turns results into report results, leaving the passes out
// unless passes is set (the summary counts them either way). A result that
// reads as it did in the previous report keeps its timestamp (the time it
// was first found): an audit that finds nothing new then writes the same
// object, which the apiserver does not store again.
func contentOf(rs []Result, previous map[string]reports.ReportResult, now time.Time, passes bool) content {
	var c content
	counts := map[Status]int{}
	all := make([]reportsapply.ReportResultApplyConfiguration, 0, len(rs))
	sizes := make([]int, 0, len(rs))
	for _, r := range rs {
		counts[r.Status]++
		if r.Status == Pass && !passes {
			continue
		}
		ts := metav1.Timestamp{Seconds: now.Unix()}
		if before, ok := previous[resultKey(r.Object, r.Policy)]; ok && string(before.Result) == string(r.Status) && before.Description == r.Message {
			ts = before.Timestamp
		}
		props := map[string]string{}
		if r.PolicySetVersion != "" {
			props[PropertyPolicySetVersion] = r.PolicySetVersion
		}
		if r.Field != "" {
			props[PropertyField] = r.Field
		}
		if r.Enforcement != "" {
			props[PropertyEnforcement] = string(r.Enforcement)
		}
		x := reportsapply.ReportResult().
			WithSource(Source).
			WithPolicy(r.Policy).
			WithResult(reports.Result(r.Status)).
			WithSeverity(severities[r.Status]).
			WithScored(true).
			WithTimestamp(ts).
			WithSubjects(r.Object)
		if r.Message != "" {
			x.WithDescription(r.Message)
		}
		if len(props) > 0 {
			x.WithProperties(props)
		}
		all = append(all, *x)
		b, _ := json.Marshal(x) // plain strings and maps: cannot fail
		sizes = append(sizes, len(b))
	}
	c.summary = reportsapply.ReportSummary().WithPass(counts[Pass]).WithFail(counts[Fail]).WithWarn(counts[Warn]).WithError(counts[Error]).WithSkip(0)
	c.results, c.limits = fit(all, sizes)
	if !passes && c.limits == nil {
		c.limits = reportsapply.Limits().WithStatusFilter(violationsOnly...)
	}
	return c
}

// fit keeps the results within maxReportBytes: all of them when they fit,
// else only those that are not a pass, cut to the budget.
func fit(all []reportsapply.ReportResultApplyConfiguration, sizes []int) ([]reportsapply.ReportResultApplyConfiguration, *reportsapply.LimitsApplyConfiguration) {
	total := 0
	for _, s := range sizes {
		total += s
	}
	if total <= maxReportBytes {
		return all, nil
	}
	limits := reportsapply.Limits().WithStatusFilter(violationsOnly...)
	var kept []reportsapply.ReportResultApplyConfiguration
	total = 0
	for i, r := range all {
		if *r.Result == reports.Result(Pass) {
			continue
		}
		if total+sizes[i] > maxReportBytes {
			limits.WithMaxResults(len(kept))
			break
		}
		total += sizes[i]
		kept = append(kept, r)
	}
	return kept, limits
}

// ReportWriter writes reports. Client applies and deletes; it also reads the
// previous reports unless Reader is set.
type ReportWriter struct {
	Client client.Client
	// Reader, when set, reads the previous reports: the controller reads
	// them from the apiserver, so the manager keeps no informer of Reports.
	// Such an informer holds a copy of every Report (each up to
	// maxReportBytes) and decodes each write the audit makes once more as a
	// watch event, while only the leader reads a Report, once per audit.
	Reader client.Reader
	// PassResults lists a result per policy for every job that passes it,
	// as well as the violations. Off by default: at 100 jobs and 10
	// policies a namespace's Report then holds 1,000 results, nearly all
	// passes, and writing them makes most of the apiserver's work in a full
	// audit.
	PassResults bool
	Now         func() time.Time
}

func (w ReportWriter) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// PreviousReport returns the results of namespace ns's Report (ns "" for the
// ClusterReport): nil when there is no report, non-nil when there is one.
func (w ReportWriter) PreviousReport(ctx context.Context, ns string) ([]reports.ReportResult, error) {
	var reader client.Reader = w.Client
	if w.Reader != nil {
		reader = w.Reader
	}
	var err error
	var results []reports.ReportResult
	if ns == "" {
		var r reports.ClusterReport
		err = reader.Get(ctx, client.ObjectKey{Name: ReportName}, &r)
		results = r.Results
	} else {
		var r reports.Report
		err = reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ReportName}, &r)
		results = r.Results
	}
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the previous report: %w", err)
	}
	if results == nil {
		results = []reports.ReportResult{} // it exists: non-nil
	}
	return results, nil
}

// WriteNamespace writes namespace ns's Report with results, or deletes it
// when there are none (nothing in the namespace is judged any more).
func (w ReportWriter) WriteNamespace(ctx context.Context, ns *corev1.Namespace, rs []Result, previous []reports.ReportResult) error {
	if len(rs) == 0 {
		if previous == nil {
			return nil
		}
		r := &reports.Report{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: ReportName}}
		return client.IgnoreNotFound(w.Client.Delete(ctx, r))
	}
	c := contentOf(rs, Previous(previous), w.now(), w.PassResults)
	r := reportsapply.Report(ReportName, ns.Name).
		WithLabels(map[string]string{LabelManagedBy: Source}).
		// Owned by its Namespace: deleted with it even by a cluster whose
		// namespace controller somehow left it behind (garbage collection).
		WithOwnerReferences(metav1apply.OwnerReference().
			WithAPIVersion("v1").WithKind("Namespace").WithName(ns.Name).WithUID(ns.UID)).
		WithSource(Source).
		WithSummary(c.summary).
		WithResults(ptrs(c.results)...)
	if c.limits != nil {
		r.WithConfiguration(reportsapply.ReportConfiguration().WithLimits(c.limits))
	}
	return w.Client.Apply(ctx, r, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// WriteCluster writes the ClusterReport with results, or deletes it when there
// are none.
func (w ReportWriter) WriteCluster(ctx context.Context, rs []Result, previous []reports.ReportResult) error {
	if len(rs) == 0 {
		if previous == nil {
			return nil
		}
		r := &reports.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: ReportName}}
		return client.IgnoreNotFound(w.Client.Delete(ctx, r))
	}
	c := contentOf(rs, Previous(previous), w.now(), w.PassResults)
	r := reportsapply.ClusterReport(ReportName).
		WithLabels(map[string]string{LabelManagedBy: Source}).
		WithSource(Source).
		WithSummary(c.summary).
		WithResults(ptrs(c.results)...)
	if c.limits != nil {
		r.WithConfiguration(reportsapply.ReportConfiguration().WithLimits(c.limits))
	}
	return w.Client.Apply(ctx, r, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

func ptrs[T any](s []T) []*T {
	out := make([]*T, len(s))
	for i := range s {
		out[i] = ptr.To(s[i])
	}
	return out
}
