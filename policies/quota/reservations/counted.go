package reservations

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/render"
)

// An entry is released once its job's pods exist (PodsCreated): from then on
// the namespace's ResourceQuotas are trusted to count them in status.used.
// The apiserver's quota admission charges every pod there before storing it,
// but kube-controller-manager's resourcequota controller recomputes
// status.used from the pods its informer has seen, and a recompute that
// listed them before a create landed and wrote after it leaves that pod
// out. Nothing corrects it until the controller syncs that quota again (a
// pod of the namespace finishing or deleted, a change of the quota's spec,
// or its full resync, every 5 minutes by default; kubernetes/kubernetes
// #24494, "latent list"). This project's CI saw it: two pods of 8 GPUs
// created, status.used 8 for 30 s. Released then, an entry leaves its pods
// counted nowhere, and admission gives their quota to the next job.
//
// So the leader releases an entry for PodsCreated only once it has seen the
// job's pods exist for settle (a recompute that raced their creates lands
// within one write's time) and a live read then finds every ResourceQuota of
// the namespace counting at least what the pods that exist there charge
// (Shortfalls). While one does not, the entries stay, rechecked every
// behindRecheck, for at most behindTrust: the controller's full resync has
// corrected any such count by then, so a shortfall still there is one
// mpiguard cannot tell from a pod it charges differently, and holding
// entries longer would only refuse jobs that fit.
const (
	settle        = 2 * time.Second
	behindRecheck = 5 * time.Second
	behindTrust   = 6 * time.Minute
)

// ReasonQuotaStatusBehind is the Warning Event on a QuotaReservation whose
// entries are kept because a ResourceQuota counts less than the pods that
// exist (or were released after behindTrust despite it).
const ReasonQuotaStatusBehind = "QuotaStatusBehind"

// Shortfall is a resource of a ResourceQuota whose status.used counts less
// than the pods that exist charge it.
type Shortfall struct {
	Quota    string
	Resource corev1.ResourceName
	// Used is the quota's status.used; Existing what the pods charge.
	Used, Existing resource.Quantity
}

func (s Shortfall) String() string {
	return fmt.Sprintf("ResourceQuota %s counts %s of %s in status.used where the pods that exist charge %s",
		s.Quota, s.Used.String(), s.Resource, s.Existing.String())
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
		if Charged(&pods[i], now) {
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
				out = append(out, Shortfall{Quota: q.Namespace + "/" + q.Name, Resource: name, Used: used, Existing: existing})
			}
		}
	}
	slices.SortFunc(out, func(a, b Shortfall) int {
		return cmp.Or(strings.Compare(a.Quota, b.Quota), strings.Compare(string(a.Resource), string(b.Resource)))
	})
	return out
}

// describeShortfalls is the Event's and log's account of quotas behind their
// pods: what each counts, and what the leader does about it.
func describeShortfalls(short []Shortfall, held []string, released bool) string {
	counts := make([]string, len(short))
	for i, s := range short {
		counts[i] = s.String()
	}
	what := fmt.Sprintf("the entries of %s, whose pods exist, are kept until it counts them (at most %s)", strings.Join(held, ", "), behindTrust)
	if released {
		what = fmt.Sprintf("still so after %s: the entries of %s are released (is kube-controller-manager's resourcequota controller running?)", behindTrust, strings.Join(held, ", "))
	}
	return fmt.Sprintf("%s: its controller's last count missed pods created meanwhile; %s", strings.Join(counts, "; "), what)
}
