package audit

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	dto "github.com/prometheus/client_model/go"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/internal/audit"
)

// report reads namespace ns's Report ("" for the ClusterReport); nil when
// there is none.
func report(ctx context.Context, ns string) *reports.Report {
	GinkgoHelper()
	r := &reports.Report{}
	var err error
	if ns == "" {
		var cr reports.ClusterReport
		err = env.Client.Get(ctx, client.ObjectKey{Name: audit.ReportName}, &cr)
		r.ObjectMeta, r.Results, r.Summary, r.Source = cr.ObjectMeta, cr.Results, cr.Summary, cr.Source
	} else {
		err = env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: audit.ReportName}, r)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	Expect(err).NotTo(HaveOccurred())
	return r
}

// resultOf returns the result policy gives the object named name in the
// report of namespace ns ("" for the ClusterReport), or an error saying why
// there is none, for Eventually.
func resultOf(ctx context.Context, ns, kind, name, policy string) (*reports.ReportResult, error) {
	r := report(ctx, ns)
	if r == nil {
		return nil, fmt.Errorf("no report %q in namespace %q", audit.ReportName, ns)
	}
	for i := range r.Results {
		x := &r.Results[i]
		if x.Policy == policy && len(x.Subjects) == 1 && x.Subjects[0].Kind == kind && x.Subjects[0].Name == name {
			return x, nil
		}
	}
	return nil, fmt.Errorf("report of %q has no %s result for %s %s (%d results)", ns, policy, kind, name, len(r.Results))
}

// eventuallyAudited waits until namespace ns has a report: its objects were
// judged (a Report lists violations; passes are counted in its summary).
func eventuallyAudited(ctx context.Context, ns string) *reports.Report {
	GinkgoHelper()
	var r *reports.Report
	Eventually(func(g Gomega) {
		r = report(ctx, ns)
		g.Expect(r).NotTo(BeNil(), "no report in %q", ns)
	}).WithContext(ctx).WithTimeout(auditWait).Should(Succeed())
	return r
}

// eventuallyPasses waits until policy passes the object named name: the
// report of ns says it lists only what does not pass (the shipped default,
// --audit-pass-results off), counts at least one pass, and has no result of
// policy for the object. Only a re-audit removes a violation it listed
// before, so after a fail this is the pass, not a missed audit.
func eventuallyPasses(ctx context.Context, ns, kind, name, policy string) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		r := report(ctx, ns)
		g.Expect(r).NotTo(BeNil(), "no report in %q", ns)
		g.Expect(r.Configuration).NotTo(BeNil(), "a report without passes says so")
		g.Expect(r.Configuration.Limits.StatusFilter).To(ConsistOf(
			reports.StatusFilter(audit.Fail), reports.StatusFilter(audit.Warn), reports.StatusFilter(audit.Error)))
		g.Expect(r.Summary.Pass).To(BeNumerically(">", 0))
		got, err := resultOf(ctx, ns, kind, name, policy)
		g.Expect(err).To(HaveOccurred(), "policy %s still lists %s %s: %s %s", policy, kind, name, resultStatus(got), resultDescription(got))
	}).WithContext(ctx).WithTimeout(auditWait).Should(Succeed())
}

func resultStatus(r *reports.ReportResult) string {
	if r == nil {
		return ""
	}
	return string(r.Result)
}

func resultDescription(r *reports.ReportResult) string {
	if r == nil {
		return ""
	}
	return r.Description
}

// eventuallyResult waits until policy's result for the object is want and
// returns it.
func eventuallyResult(ctx context.Context, ns, kind, name, policy string, want reports.Result) *reports.ReportResult {
	GinkgoHelper()
	var got *reports.ReportResult
	Eventually(func(g Gomega) {
		var err error
		got, err = resultOf(ctx, ns, kind, name, policy)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Result).To(Equal(want), "result of %s %s for %s: %s", kind, name, policy, got.Description)
	}).WithContext(ctx).WithTimeout(auditWait).Should(Succeed())
	return got
}

// violations reads mpiguard_audit_violations{policy,namespace} (the
// replicas share this process's registry; only the leader audits); -1 when
// the series does not exist.
func violations(policy, ns string) float64 {
	GinkgoHelper()
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "mpiguard_audit_violations" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "policy") == policy && label(m, "namespace") == ns {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// violationEvents lists the PolicyViolation events on TrainJob name.
func violationEvents(ctx context.Context, ns, name string) []eventsv1.Event {
	GinkgoHelper()
	var list eventsv1.EventList
	Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Reason == audit.ReasonPolicyViolation && e.Regarding.Kind == trainer.TrainJobKind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// bypassRuntimeWebhook removes mpiguard's ClusterTrainingRuntime webhook from
// the webhook configuration until the spec ends, as a cluster admin who
// bypasses it (or a runtime older than mpiguard's install) would leave the
// cluster: the runtime webhook then no longer stops an edit that breaks the
// template rules, and only audit can tell.
func bypassRuntimeWebhook(ctx context.Context) {
	GinkgoHelper()
	const name = "vclustertrainingruntime.mpiguard.io"
	var list admissionv1.ValidatingWebhookConfigurationList
	Expect(env.Client.List(ctx, &list)).To(Succeed())
	for i := range list.Items {
		cfg := &list.Items[i]
		for j, w := range cfg.Webhooks {
			if w.Name != name {
				continue
			}
			removed := *w.DeepCopy()
			cfg.Webhooks = append(cfg.Webhooks[:j], cfg.Webhooks[j+1:]...)
			Expect(env.Client.Update(ctx, cfg)).To(Succeed())
			key := client.ObjectKeyFromObject(cfg)
			DeferCleanup(func(ctx context.Context) {
				Eventually(func() error {
					var cur admissionv1.ValidatingWebhookConfiguration
					if err := env.Client.Get(ctx, key, &cur); err != nil {
						return err
					}
					cur.Webhooks = append(cur.Webhooks, removed)
					return env.Client.Update(ctx, &cur)
				}).WithContext(ctx).Should(Succeed())
			})
			return
		}
	}
	Fail("no webhook " + name + " in any ValidatingWebhookConfiguration")
}

// setQuotaPods sets a ResourceQuota's pods limit, and its status as the
// quota controller would (envtest runs none), none used.
func setQuotaPods(ctx context.Context, ns, name, pods string) {
	GinkgoHelper()
	Eventually(func() error {
		var q corev1.ResourceQuota
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &q); err != nil {
			return err
		}
		q.Spec.Hard[corev1.ResourcePods] = mustQuantity(pods)
		if err := env.Client.Update(ctx, &q); err != nil {
			return err
		}
		q.Status.Hard = q.Spec.Hard
		q.Status.Used = corev1.ResourceList{corev1.ResourcePods: mustQuantity("0")}
		return env.Client.Status().Update(ctx, &q)
	}).WithContext(ctx).Should(Succeed())
}
