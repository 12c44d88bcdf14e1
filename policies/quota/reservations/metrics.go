package reservations

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
)

func init() { metrics.Registry.MustRegister(entriesHeld, releasedTotal) }
