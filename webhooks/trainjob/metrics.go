package trainjob

import (
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// reservationWrites counts the writes of quota reservations by result: a
// conflict means another replica wrote first and the decision was made again.
var reservationWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mpiguard_quota_reservation_writes_total",
	Help: "Writes of QuotaReservation entries by admission, by result (ok, conflict, error).",
}, []string{"result"})

// unconfirmedRefusals counts requests refused because their namespace held as
// many reservations on trust as allowed (reserve.go, tooManyUnconfirmed).
var unconfirmedRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mpiguard_quota_reservation_unconfirmed_refusals_total",
	Help: "TrainJob creates refused because their namespace already held --max-unconfirmed-reservations reservations whose TrainJob had not appeared.",
}, []string{"namespace"})

// fullRefusals counts requests refused because their namespace's
// QuotaReservation held as many entries as one object may (reserve.go, full).
var fullRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "mpiguard_quota_reservation_full_refusals_total",
	Help: "TrainJob creates and resumes refused because their namespace's QuotaReservation already held the most entries one object keeps (admitted jobs whose pods do not exist yet).",
}, []string{"namespace"})

func init() { metrics.Registry.MustRegister(reservationWrites, unconfirmedRefusals, fullRefusals) }

type webhookMetrics struct{}

func (webhookMetrics) observeWrite(err error) {
	switch {
	case err == nil:
		reservationWrites.WithLabelValues("ok").Inc()
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
		reservationWrites.WithLabelValues("conflict").Inc()
	default:
		reservationWrites.WithLabelValues("error").Inc()
	}
}
