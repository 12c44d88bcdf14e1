// Package trainjob serves mpiguard's admission webhooks for Kubeflow Trainer
// TrainJobs. Only MPI TrainJobs (their runtime has mlPolicy.mpi) are governed;
// every other TrainJob is allowed untouched after one cached runtime lookup.
// Each handler decodes the request, runs it through the admission pipeline
// (internal/pipeline: render, quota, policy engine) and answers with its
// evaluation; the validating one also records the quota a job that starts pods
// reserves (reserve.go).
// controller-runtime's admission.Webhook serves each request and decodes the
// AdmissionReview; decode.go reads the TrainJob with its admission.Decoder.
package trainjob

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
)

// Paths at which the webhooks are served; config/webhook is generated from the markers.
const (
	ValidatePath = "/validate-trainer-kubeflow-org-v1alpha1-trainjob"
	MutatePath   = "/mutate-trainer-kubeflow-org-v1alpha1-trainjob"
)

// Options configures the TrainJob webhooks.
type Options struct {
	// Pipeline decides every request; its engine is shared with the policy
	// reloader, the pipeline itself with audit.
	Pipeline *pipeline.Pipeline
	// Reservations is the quota reservation transaction that decides every
	// request that starts pods. Everything in the process that reserves
	// shares one (the Kueue AdmissionCheck too), so their decisions in a
	// namespace are batched together.
	Reservations *admit.Admitter
	// Nodes are the cluster's nodes by shape, kept by an informer
	// (pipeline.WatchNodes); nil: they are listed per decision.
	Nodes *capacity.Index
}

// SetupWithManager registers the TrainJob webhooks on the manager's webhook server.
func SetupWithManager(_ context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Pipeline == nil || opts.Reservations == nil {
		return fmt.Errorf("trainjob webhooks need an admission pipeline and a reservation transaction")
	}
	a := &admitter{
		cluster:      cluster{Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), NodeIndex: opts.Nodes},
		pipeline:     opts.Pipeline,
		reservations: opts.Reservations,
		recorder:     mgr.GetEventRecorder(EventsController),
	}
	srv := mgr.GetWebhookServer()
	srv.Register(ValidatePath, &webhook.Admission{Handler: Validator{a}})
	srv.Register(MutatePath, &webhook.Admission{Handler: Mutator{a}})
	return nil
}
