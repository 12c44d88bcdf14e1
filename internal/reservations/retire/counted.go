package retire

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// The apiserver's quota admission charges every pod in its ResourceQuotas'
// status.used before storing it, and admission trusts status.used to count
// the pods that exist (an entry holds only its job's missing pods). But
// kube-controller-manager's resourcequota controller recomputes status.used
// from the pods its informer has seen, and a recompute that listed them
// before a create landed and wrote after it leaves that pod out. Nothing
// corrects it until the controller syncs that quota again (a pod of the
// namespace finishing or deleted, a change of the quota's spec, or its full
// resync, every 5 minutes by default; kubernetes/kubernetes#24494, "latent
// list"). This project's CI saw it: two pods of 8 GPUs, status.used 8 for
// 30 s. Admission would give those pods' quota to the next job.
//
// So the leader compares, live, each quota's status.used with what the
// namespace's pods charge it (Shortfalls) whenever a quota's count may have
// dropped (a recompute: some value went down or appeared), on its first
// reconcile of a namespace, and while a difference is recorded; it records
// the difference in the QuotaReservation (spec.uncounted), which
// admission adds to status.used (ReadState). An entry whose pods exist is
// released only settle after the leader first saw them, so a recompute that
// raced their creates (it lands within one write's time) finds the object
// still there to record in. A difference still there after behindTrust (the
// controller's full resync has corrected any such count by then) is one
// mpiguard cannot explain, perhaps a pod it charges differently; counting it
// longer would only refuse jobs that fit, so it is dropped, with a Warning.
const (
	settle        = 2 * time.Second
	behindRecheck = 5 * time.Second
	behindTrust   = 6 * time.Minute
)

// ReasonQuotaStatusBehind is the Warning Event on a QuotaReservation whose
// namespace has a ResourceQuota counting less than the pods that exist.
const ReasonQuotaStatusBehind = "QuotaStatusBehind"

// Shortfall is a resource of a ResourceQuota whose status.used counts less
// than the pods that exist charge it.
type Shortfall struct {
	Namespace, Quota string
	Resource         corev1.ResourceName
	// Used is the quota's status.used; Existing what the pods charge.
	Used, Existing resource.Quantity
}

func (s Shortfall) String() string {
	return fmt.Sprintf("ResourceQuota %s/%s counts %s of %s in status.used where the pods that exist charge %s",
		s.Namespace, s.Quota, s.Used.String(), s.Resource, s.Existing.String())
}

// Shortfalls compares the status.used of each quota with what the pods
// charge it, for every resource it limits that pods are charged for: each
// pod charged at now (Charged) and selected by the quota's scopes counts
// what the apiserver's quota admission charged it (render.PodQuotaUsage).
// pods are every pod of the quotas' namespace, read live. status.used may
// count more (a finished pod the controller has not given back yet), never
// less, unless a recompute missed pods that exist.
func Shortfalls(quotas []corev1.ResourceQuota, pods []corev1.Pod, now time.Time) []Shortfall {
	usage := make([]corev1.ResourceList, len(pods))
	for i := range pods {
		if reservations.Charged(&pods[i], now) {
			usage[i] = render.PodQuotaUsage(&pods[i])
		}
	}
	var out []Shortfall
	for qi := range quotas {
		q := &quotas[qi]
		var selected []corev1.ResourceList
		for i := range pods {
			if usage[i] != nil && quota.Selects(q, &pods[i].Spec) {
				selected = append(selected, usage[i])
			}
		}
		for name := range q.Spec.Hard {
			if _, _, pods := quota.ChargedName(name); !pods {
				continue // object counts: no pod is charged for them
			}
			var existing resource.Quantity
			for _, u := range selected {
				amount, _ := quota.ChargedFor(name, u)
				existing.Add(amount)
			}
			if used := q.Status.Used[name]; used.Cmp(existing) < 0 {
				out = append(out, Shortfall{Namespace: q.Namespace, Quota: q.Name, Resource: name, Used: used, Existing: existing})
			}
		}
	}
	slices.SortFunc(out, func(a, b Shortfall) int {
		return cmp.Or(strings.Compare(a.Quota, b.Quota), strings.Compare(string(a.Resource), string(b.Resource)))
	})
	return out
}

// uncountedNow is spec.uncounted after a live read found short: what each
// quota lacks, since when (a record of the same quota keeps its time), and
// apart the shortfalls recorded for behindTrust already (expired), which
// are no longer counted.
func uncountedNow(prev []v1alpha1.UncountedUsage, short []Shortfall, now time.Time) (record []v1alpha1.UncountedUsage, expired []Shortfall) {
	for _, s := range short {
		lacks := s.Existing.DeepCopy()
		lacks.Sub(s.Used)
		i := slices.IndexFunc(record, func(u v1alpha1.UncountedUsage) bool { return u.ResourceQuota == s.Quota })
		if i < 0 {
			since := metav1.NewTime(now)
			if j := slices.IndexFunc(prev, func(u v1alpha1.UncountedUsage) bool { return u.ResourceQuota == s.Quota }); j >= 0 {
				since = prev[j].Since
			}
			record = append(record, v1alpha1.UncountedUsage{ResourceQuota: s.Quota, Since: since, Usage: corev1.ResourceList{}})
			i = len(record) - 1
		}
		if now.Sub(record[i].Since.Time) >= behindTrust {
			expired = append(expired, s)
			continue
		}
		record[i].Usage[s.Resource] = lacks
	}
	return slices.DeleteFunc(record, func(u v1alpha1.UncountedUsage) bool { return len(u.Usage) == 0 }), expired
}

// describeUncounted is the Event's and log's account of quotas behind their
// pods, and of what is done about it.
func describeUncounted(short []Shortfall, expired bool) string {
	counts := make([]string, len(short))
	for i, s := range short {
		counts[i] = s.String()
	}
	what := fmt.Sprintf("mpiguard counts the difference as used until it counts those pods (at most %s)", behindTrust)
	if expired {
		what = fmt.Sprintf("still so after %s: mpiguard no longer counts the difference (is kube-controller-manager's resourcequota controller running?)", behindTrust)
	}
	return fmt.Sprintf("%s: its controller's last count missed pods created meanwhile; %s", strings.Join(counts, "; "), what)
}

// recounted says whether a quota's status.used may have been recomputed
// from an informer behind the pods that exist: a value it charges pods for
// went down or appeared. The apiserver's own charges only add.
func recounted(old, cur *corev1.ResourceQuota) bool {
	for name, v := range cur.Status.Used {
		if _, _, pods := quota.ChargedName(name); !pods {
			continue
		}
		if was, ok := old.Status.Used[name]; !ok || v.Cmp(was) < 0 {
			return true
		}
	}
	return false
}
