package retire

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// reserved is what admission holds of each ResourceQuota on top of its
// status.used, labelled as kube-state-metrics labels kube_resourcequota, so
// a dashboard puts reserved, used and hard side by side (config/grafana).
var reserved = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mpiguard_quota_reserved",
	Help: "What the reservation entries of a namespace hold of each ResourceQuota's resource (admitted TrainJobs whose pods do not exist yet), in the quota's units; 0 for a resource nothing is reserved of. kube-state-metrics' kube_resourcequota has the same labels.",
}, []string{"namespace", "resourcequota", "resource"})

// consumed and consumption are a quota's status.used plus what admission
// reserves of it, in the quota's units and as a share of its hard limit:
// the quota alert (config/prometheus/rule.yaml, MpiguardQuotaNearlyConsumed)
// and the dashboard's quota panel read them.
var (
	consumed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_quota_used_or_reserved",
		Help: "A ResourceQuota's status.used of a resource plus what mpiguard's reservations hold of it (admitted TrainJobs whose pods do not exist yet), in the quota's units.",
	}, []string{"namespace", "resourcequota", "resource"})
	consumption = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_quota_consumption_ratio",
		Help: "mpiguard_quota_used_or_reserved divided by the ResourceQuota's hard limit of the resource (1: nothing more fits); absent for a hard limit of 0.",
	}, []string{"namespace", "resourcequota", "resource"})
)

func init() { metrics.Registry.MustRegister(reserved, consumed, consumption) }

// observeReserved sets namespace ns's reserved series from the entries res
// keeps and the pods that exist, for each quota the cache has there.
func (r *Reconciler) observeReserved(ctx context.Context, res *v1alpha1.QuotaReservation, keep []v1alpha1.ReservationEntry, existing reservations.Existing) error {
	var quotas corev1.ResourceQuotaList
	if err := r.client.List(ctx, &quotas, client.InNamespace(res.Spec.Namespace)); err != nil {
		return err
	}
	held := *res
	held.Spec.Entries = keep
	setReserved(res.Spec.Namespace, quotas.Items, reservations.Outstanding(&held, existing))
	return nil
}

// setReserved replaces namespace ns's series: per quota, every resource it
// limits, what reservations hold of it.
func setReserved(ns string, quotas []corev1.ResourceQuota, outstanding []quota.Reservation) {
	forgetReserved(ns)
	for i := range quotas {
		q := &quotas[i]
		sums := quota.ReservedOf(q, outstanding)
		for name := range q.Spec.Hard {
			var v float64
			if held := sums[name]; held != nil {
				v = held.Total.AsApproximateFloat64()
			}
			reserved.WithLabelValues(ns, q.Name, string(name)).Set(v)
			used := q.Status.Used[name]
			total := used.AsApproximateFloat64() + v
			consumed.WithLabelValues(ns, q.Name, string(name)).Set(total)
			if hard := q.Spec.Hard[name]; !hard.IsZero() {
				consumption.WithLabelValues(ns, q.Name, string(name)).Set(total / hard.AsApproximateFloat64())
			}
		}
	}
}

// forgetReserved drops namespace ns's series (its QuotaReservation is gone).
func forgetReserved(ns string) {
	for _, g := range []*prometheus.GaugeVec{reserved, consumed, consumption} {
		g.DeletePartialMatch(prometheus.Labels{"namespace": ns})
	}
}
