// Package trainjob serves mpiguard's admission webhooks for Kubeflow Trainer
// TrainJobs. Only MPI TrainJobs (their runtime has mlPolicy.mpi) are governed;
// every other TrainJob is allowed untouched after one cached runtime lookup.
// Each handler decodes the request, runs it through the admission pipeline
// (policies/pipeline: render, quota, policy engine) and answers with its
// verdict; the validating one also records the quota a job that starts pods
// reserves (reserve.go).
// controller-runtime's admission.Webhook serves each request and decodes the
// AdmissionReview; decode.go reads the TrainJob with its admission.Decoder.
package trainjob

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mpiguard/mpiguard/policies/pipeline"
	"github.com/mpiguard/mpiguard/policies/quota/reservations"
)

// Paths at which the webhooks are served; config/webhook is generated from the markers.
const (
	ValidatePath = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
	MutatePath   = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
)

// DefaultMaxUnconfirmedReservations is the default cap of reservations a
// namespace holds on trust. It is far above what a burst of real submits
// leaves unconfirmed at once (a create's TrainJob appears within
// milliseconds of its admission), and keeps a QuotaReservation object far
// below etcd's object size limit.
const DefaultMaxUnconfirmedReservations = 500

// Options configures the TrainJob webhooks.
type Options struct {
	// Pipeline decides every request; its engine is shared with the policy
	// reloader, the pipeline itself with audit.
	Pipeline *pipeline.Pipeline
	// ReservationGrace is how long a reservation is taken on trust before its
	// TrainJob must exist (default 30s): a create that fails after admission,
	// or a forged review, stops holding quota after it.
	ReservationGrace time.Duration
	// MaxUnconfirmedReservations caps, per namespace, the reservations held
	// on trust: creates admitted whose TrainJob has not appeared (default
	// 500; negative: no cap). A further create in that namespace
	// is refused with "retry" until some are confirmed or released.
	MaxUnconfirmedReservations int
	// Namespace is mpiguard's own namespace, which holds the QuotaReservations.
	Namespace string
	// Reservations reads and writes the QuotaReservations. Everything in the
	// process that writes them shares one (the Kueue AdmissionCheck too), so
	// each sees the others' last writes; nil: a store of its own.
	Reservations *reservations.Store
}

// SetupWithManager registers the TrainJob webhooks on the manager's webhook server.
func SetupWithManager(_ context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Pipeline == nil {
		return fmt.Errorf("trainjob webhooks need an admission pipeline")
	}
	if opts.ReservationGrace == 0 {
		opts.ReservationGrace = 30 * time.Second
	}
	switch {
	case opts.MaxUnconfirmedReservations == 0:
		opts.MaxUnconfirmedReservations = DefaultMaxUnconfirmedReservations
	case opts.MaxUnconfirmedReservations < 0:
		opts.MaxUnconfirmedReservations = 0
	}
	if opts.Reservations == nil {
		opts.Reservations = reservations.NewStore(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetClient(), opts.Namespace)
	}
	a := &admitter{
		cluster:        cluster{Reader: mgr.GetClient(), Live: mgr.GetAPIReader()},
		pipeline:       opts.Pipeline,
		grace:          opts.ReservationGrace,
		maxUnconfirmed: opts.MaxUnconfirmedReservations,
		reservations:   opts.Reservations,
		recorder:       mgr.GetEventRecorder(EventsController),
	}
	v := Validator{a}
	a.batches = newBatches(v.decideBatch)
	srv := mgr.GetWebhookServer()
	srv.Register(ValidatePath, &webhook.Admission{Handler: v})
	srv.Register(MutatePath, &webhook.Admission{Handler: Mutator{a}})
	return nil
}
