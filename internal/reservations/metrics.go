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
	// statusBehind is, per governed namespace, 1 while a ResourceQuota there
	// counts less than the pods that exist (counted.go), else 0.
	statusBehind = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mpiguard_quota_status_behind",
		Help: "1 while a ResourceQuota of the namespace counts less in status.used than its pods that exist charge (its controller missed pods created meanwhile; admission counts the difference as used), else 0.",
	}, []string{"namespace"})
	// writes counts the writes of entries by admission, by result: a
	// conflict means another replica wrote first and the decision was made again.
	writes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_quota_reservation_writes_total",
		Help: "Writes of QuotaReservation entries by admission, by result (ok, conflict, error).",
	}, []string{"result"})
	// unconfirmedRefusals counts requests refused because their namespace
	// held as many reservations on trust as allowed (tooManyUnconfirmed).
	unconfirmedRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_quota_reservation_unconfirmed_refusals_total",
		Help: "TrainJob creates refused because their namespace already held --max-unconfirmed-reservations reservations whose TrainJob had not appeared.",
	}, []string{"namespace"})
	// fullRefusals counts requests refused because their namespace's
	// QuotaReservation held as many entries as one object may (full).
	fullRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mpiguard_quota_reservation_full_refusals_total",
		Help: "TrainJob creates and resumes refused because their namespace's QuotaReservation already held the most entries one object keeps (admitted jobs whose pods do not exist yet).",
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(entriesHeld, releasedTotal, statusBehind, writes, unconfirmedRefusals, fullRefusals)
}

// observeWrite counts one write of entries by its result.
func observeWrite(err error) {
	switch {
	case err == nil:
		writes.WithLabelValues("ok").Inc()
	case retryable(err):
		writes.WithLabelValues("conflict").Inc()
	default:
		writes.WithLabelValues("error").Inc()
	}
}
