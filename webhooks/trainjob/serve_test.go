package trainjob

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/randfill"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// recordingHandler remembers the request it was given and answers with
// something built from it, so a wrongly decoded request shows in the answer too.
type recordingHandler struct {
	mu  sync.Mutex
	got admission.Request
}

func (h *recordingHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	h.mu.Lock()
	h.got = req
	h.mu.Unlock()
	if len(req.Name)%2 == 0 {
		return admission.Allowed("").WithWarnings(string(req.Operation), req.Namespace+"/"+req.Name)
	}
	return admission.Denied("denied " + req.UserInfo.Username)
}

func (h *recordingHandler) last() admission.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got
}

// serveBoth sends the same request to controller-runtime's Webhook.ServeHTTP
// and to reviewServer, each with its own recording handler.
func serveBoth(t *testing.T, body []byte, contentType string) (want, got *httptest.ResponseRecorder, wantReq, gotReq admission.Request) {
	t.Helper()
	hWant, hGot := &recordingHandler{}, &recordingHandler{}
	send := func(h http.Handler) *httptest.ResponseRecorder {
		var r *http.Request
		if body == nil {
			r = httptest.NewRequest(http.MethodPost, ValidatePath, http.NoBody)
		} else {
			r = httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
		}
		r.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	want = send(&admission.Webhook{Handler: hWant})
	got = send(reviewServer{&admission.Webhook{Handler: hGot}})
	return want, got, hWant.last(), hGot.last()
}

// TestReviewServerMatchesControllerRuntime: on randomly filled
// AdmissionReviews (v1, v1beta1 and unversioned; objects, old objects and
// options present, null and absent) reviewServer hands the webhook the same
// request as controller-runtime's Webhook.ServeHTTP and answers the same bytes.
func TestReviewServerMatchesControllerRuntime(t *testing.T) {
	versions := []string{"admission.k8s.io/v1", "admission.k8s.io/v1beta1", ""}
	withObject := 0
	for seed := range int64(300) {
		f := fixtures.RandomFiller(seed).Funcs(randomRawExtension)
		var req admissionv1.AdmissionRequest
		f.Fill(&req)
		review := admissionv1.AdmissionReview{Request: &req}
		if v := versions[seed%3]; v != "" {
			review.TypeMeta = metav1.TypeMeta{APIVersion: v, Kind: "AdmissionReview"}
		}
		if len(req.Object.Raw) > 2 {
			withObject++
		}
		body, err := stdjson.Marshal(review)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		want, got, wantReq, gotReq := serveBoth(t, body, "application/json")
		if !equality.Semantic.DeepEqual(wantReq, gotReq) {
			t.Fatalf("seed %d: the webhook got another request (-controller-runtime +reviewServer):\n%s", seed, cmp.Diff(wantReq, gotReq))
		}
		if want.Code != got.Code || want.Body.String() != got.Body.String() {
			t.Fatalf("seed %d: answers differ:\ncontroller-runtime: %d %s\nreviewServer:       %d %s", seed, want.Code, want.Body, got.Code, got.Body)
		}
	}
	if withObject < 100 {
		t.Fatalf("only %d random reviews carried an object; fill differently", withObject)
	}
}

// TestReviewServerAnswersOddReviewsAsControllerRuntime: reviews the apiserver
// never sends (another version or kind, no request) are handled as
// controller-runtime handles them.
func TestReviewServerAnswersOddReviewsAsControllerRuntime(t *testing.T) {
	for name, body := range map[string]string{
		"other version":  `{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"x","name":"ab"}}`,
		"other kind":     `{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"x"}}`,
		"no request":     `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"empty object":   `{}`,
		"null request":   `{"request":null}`,
		"only a kind":    `{"kind":"AdmissionReview","request":{"uid":"x"}}`,
		"only a version": `{"apiVersion":"admission.k8s.io/v1","request":{"uid":"x"}}`,
		"only v1beta1":   `{"apiVersion":"admission.k8s.io/v1beta1","request":{"uid":"x"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			want, got, wantReq, gotReq := serveBoth(t, []byte(body), "application/json")
			if diff := cmp.Diff(wantReq, gotReq); diff != "" {
				t.Errorf("the webhook got another request (-controller-runtime +reviewServer):\n%s", diff)
			}
			if want.Code != got.Code || want.Body.String() != got.Body.String() {
				t.Errorf("answers differ:\ncontroller-runtime: %d %s\nreviewServer:       %d %s", want.Code, want.Body, got.Code, got.Body)
			}
		})
	}
}

// randomRawExtension fills an object of a review: absent, null, or a random TrainJob.
func randomRawExtension(v *runtime.RawExtension, c randfill.Continue) {
	switch c.Intn(3) {
	case 0:
		*v = runtime.RawExtension{}
	case 1:
		*v = runtime.RawExtension{Raw: []byte("null")}
	default:
		var job trainer.TrainJob
		c.Fill(&job)
		raw, err := stdjson.Marshal(&job)
		if err != nil {
			panic(err)
		}
		*v = runtime.RawExtension{Raw: raw}
	}
}

// TestReviewServerRejectsWhatControllerRuntimeRejects: requests that cannot be
// read get the same error answer (the HTTP status and the code in the review).
func TestReviewServerRejectsWhatControllerRuntimeRejects(t *testing.T) {
	cases := map[string]struct {
		body        []byte
		contentType string
		// sameMessage: the error text is controller-runtime's too (decode errors
		// come from different decoders and are worded differently).
		sameMessage bool
		wantCode    int32
	}{
		"empty body":     {body: nil, contentType: "application/json", sameMessage: true, wantCode: http.StatusBadRequest},
		"content type":   {body: []byte(`{}`), contentType: "application/yaml", sameMessage: true, wantCode: http.StatusBadRequest},
		"too large":      {body: bytes.Repeat([]byte(" "), int(maxReviewSize)+1), contentType: "application/json", sameMessage: true, wantCode: http.StatusRequestEntityTooLarge},
		"not JSON":       {body: []byte(`{"request":`), contentType: "application/json", wantCode: http.StatusBadRequest},
		"wrong req type": {body: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":7}}`), contentType: "application/json", wantCode: http.StatusBadRequest},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want, got, _, _ := serveBoth(t, tc.body, tc.contentType)
			if want.Code != got.Code {
				t.Errorf("HTTP status: controller-runtime %d, reviewServer %d", want.Code, got.Code)
			}
			var wantReview, gotReview admissionv1.AdmissionReview
			if err := stdjson.Unmarshal(want.Body.Bytes(), &wantReview); err != nil {
				t.Fatalf("controller-runtime's answer: %v: %s", err, want.Body)
			}
			if err := stdjson.Unmarshal(got.Body.Bytes(), &gotReview); err != nil {
				t.Fatalf("reviewServer's answer: %v: %s", err, got.Body)
			}
			for who, r := range map[string]admissionv1.AdmissionReview{"controller-runtime": wantReview, "reviewServer": gotReview} {
				if r.Response == nil || r.Response.Allowed || r.Response.Result == nil || r.Response.Result.Code != tc.wantCode || r.Response.Result.Message == "" {
					t.Errorf("%s answered %s, want a refusal with code %d and a message", who, mustJSON(r), tc.wantCode)
				}
			}
			if tc.sameMessage && want.Body.String() != got.Body.String() {
				t.Errorf("answers differ:\ncontroller-runtime: %s\nreviewServer:       %s", want.Body, got.Body)
			}
		})
	}
}

func mustJSON(v any) string {
	b, err := stdjson.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}
