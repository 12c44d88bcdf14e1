package admit

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

var (
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
	metrics.Registry.MustRegister(writes, unconfirmedRefusals, fullRefusals)
}

// observeWrite counts one write of entries by its result.
func observeWrite(err error) {
	switch {
	case err == nil:
		writes.WithLabelValues("ok").Inc()
	case store.Retryable(err):
		writes.WithLabelValues("conflict").Inc()
	default:
		writes.WithLabelValues("error").Inc()
	}
}
