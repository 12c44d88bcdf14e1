package trainjob

import (
	"errors"
	"fmt"
	"net/http"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
)

// admitter is what both webhooks share: the cluster they read, the pipeline
// that decides, and the quota reservations the validating webhook keeps.
type admitter struct {
	cluster  cluster
	pipeline *pipeline.Pipeline
	// reservations decides the jobs that start pods and records the quota
	// they hold until their pods exist.
	reservations *admit.Admitter
	// recorder writes the Warning events of denied updates (events.go); nil: none.
	recorder events.EventRecorder
}

// decode turns an AdmissionReview's request into the pipeline's. It returns
// the final response instead when there is nothing to decide (an operation
// other than CREATE or UPDATE: allowed untouched) or the object cannot be
// read (rejected with the reason, never silently allowed).
func decode(req admission.Request) (*pipeline.Request, *admission.Response) {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		resp := admission.Allowed("")
		return nil, &resp
	}
	r := &pipeline.Request{
		Operation: engine.Operation(req.Operation),
		User:      req.UserInfo.Username,
		Groups:    req.UserInfo.Groups,
		DryRun:    ptr.Deref(req.DryRun, false),
		TrainJob:  &trainer.TrainJob{},
		Raw:       req.Object.Raw,
	}
	if err := decodeTrainJob(req.Object, r.TrainJob); err != nil {
		return nil, refused(fmt.Errorf("decoding the TrainJob: %w", err))
	}
	if r.TrainJob.Namespace == "" {
		r.TrainJob.Namespace = req.Namespace
	}
	if req.Operation == admissionv1.Update {
		r.OldTrainJob = &trainer.TrainJob{}
		if err := decodeTrainJob(req.OldObject, r.OldTrainJob); err != nil {
			return nil, refused(fmt.Errorf("decoding the stored TrainJob: %w", err))
		}
	}
	return r, nil
}

// refused answers a request that could not be judged, with the reason: 403
// for what the request or the cluster's objects make impossible (a missing
// runtime, a job that does not render), 500 when the policies themselves
// failed.
func refused(err error) *admission.Response {
	code := int32(http.StatusForbidden)
	var pe *pipeline.PolicyError
	if errors.As(err, &pe) {
		code = http.StatusInternalServerError
	}
	resp := admission.Errored(code, err)
	return &resp
}

// answer is the response to an evaluation: denied with every denial, or
// allowed, with the warnings either way, and its audit annotations. An allowed create also hears which
// NetworkPolicy template the job gets and what it leaves closed.
func answer(v *pipeline.Evaluation) admission.Response {
	if !v.Allowed() {
		return withVerdict(admission.Denied(v.DenialMessage()).WithWarnings(v.Warnings()...), v)
	}
	warnings := v.Warnings()
	if v.NetworkPolicy != "" { // only a create's evaluation has one
		warnings = append(warnings, v.NetworkPolicy)
	}
	return withVerdict(admission.Allowed("").WithWarnings(warnings...), v)
}
