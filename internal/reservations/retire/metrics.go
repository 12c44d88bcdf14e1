package retire

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	entriesHeld = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_quota_reservation_entries",
		Help: "Reservation entries held per governed namespace: TrainJobs admitted whose pods do not all exist yet.",
	}, []string{"namespace"})
	releasedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_quota_reservations_released_total",
		Help: "Reservation entries released, by reason (PodsCreated, Suspended, Finished, Deleted, NeverCreated, ResumeNotApplied).",
	}, []string{"reason"})
	// statusBehind is, per governed namespace, 1 while a ResourceQuota there
	// counts less than the pods that exist (counted.go), else 0.
	statusBehind = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_quota_status_behind",
		Help: "1 while a ResourceQuota of the namespace counts less in status.used than its pods that exist charge (its controller missed pods created meanwhile; admission counts the difference as used), else 0.",
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(entriesHeld, releasedTotal, statusBehind)
}
