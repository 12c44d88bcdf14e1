package trainjob

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	gojson "github.com/goccy/go-json"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxReviewSize is controller-runtime's limit on an AdmissionReview: two
// objects of at most 3 MB (old and new) and 1 MB for the rest.
const maxReviewSize = int64(7 * 1024 * 1024)

// reviewServer serves an admission.Webhook as controller-runtime's
// Webhook.ServeHTTP does, with one difference: the AdmissionReview is decoded
// with goccy/go-json instead of the scheme's universal deserializer, which
// scans the body twice with encoding/json (once for apiVersion and kind, once
// for the review): about 7% of the CPU of an MPI review under load
// (docs/performance.md). The answer is the Webhook's own (Handle) and is
// written as controller-runtime writes it. TestReviewServerMatchesControllerRuntime
// checks both answer the same bytes to the same requests.
type reviewServer struct {
	webhook *admission.Webhook
}

var _ http.Handler = reviewServer{}

func (s reviewServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody {
		s.fail(w, http.StatusBadRequest, errors.New("request body is empty"))
		return
	}
	defer func() { _ = r.Body.Close() }()
	limited := &io.LimitedReader{R: r.Body, N: maxReviewSize}
	body, err := io.ReadAll(limited)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	if limited.N <= 0 {
		s.fail(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request entity is too large; limit is %d bytes", maxReviewSize))
		return
	}
	if contentType := r.Header.Get("Content-Type"); contentType != "application/json" {
		s.fail(w, http.StatusBadRequest, fmt.Errorf("contentType=%s, expected application/json", contentType))
		return
	}
	gvk, req, err := decodeReview(body)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err)
		return
	}
	resp := s.webhook.Handle(r.Context(), req)
	review := admissionv1.AdmissionReview{Response: &resp.AdmissionResponse}
	review.SetGroupVersionKind(gvk)
	writeReview(w, review)
}

// decodeReview reads an AdmissionReview and returns the version it says it
// is. Like controller-runtime, it reads any version into the v1 fields (v1beta1
// has the same), takes a review that does not say for v1, and answers in the
// version of the request.
func decodeReview(body []byte) (schema.GroupVersionKind, admission.Request, error) {
	var review admissionv1.AdmissionReview
	if err := gojson.Unmarshal(body, &review); err != nil {
		return schema.GroupVersionKind{}, admission.Request{}, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	// A malformed apiVersion is refused with the parser's error, as
	// controller-runtime refuses it; GroupVersionKind would read it as none
	// and answer (found by FuzzReviewServer).
	gv, err := schema.ParseGroupVersion(review.APIVersion)
	if err != nil {
		return schema.GroupVersionKind{}, admission.Request{}, err
	}
	gvk := gv.WithKind(review.Kind)
	if gvk.Empty() {
		gvk = admissionv1.SchemeGroupVersion.WithKind("AdmissionReview")
	}
	var req admission.Request
	if review.Request != nil {
		req.AdmissionRequest = *review.Request
	}
	return gvk, req, nil
}

// fail answers a request that could not be read, as controller-runtime does:
// an AdmissionReview without a version whose response carries the error.
func (s reviewServer) fail(w http.ResponseWriter, code int32, err error) {
	ctrl.Log.WithName("webhooks").WithName("trainjob").Error(err, "bad admission request")
	resp := admission.Errored(code, err)
	writeReview(w, admissionv1.AdmissionReview{Response: &resp.AdmissionResponse})
}

// writeReview writes the answer with encoding/json, as controller-runtime
// does (the answer is small; only decoding was worth changing).
func writeReview(w io.Writer, review admissionv1.AdmissionReview) {
	if err := json.NewEncoder(w).Encode(review); err != nil {
		ctrl.Log.WithName("webhooks").WithName("trainjob").Error(err, "writing the AdmissionReview answer")
	}
}
