package trainjob

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// FuzzReviewServer sends arbitrary bodies to reviewServer and, as a reference,
// to controller-runtime's Webhook.ServeHTTP, which it replaces. For every body:
//   - no panic, and the answer is an AdmissionReview with a response: the
//     request's UID when the webhook was asked, else a 4xx refusal;
//   - on valid UTF-8 with the field names' case, reviewServer's decoder
//     (goccy/go-json) reads what encoding/json reads, which it stands in for,
//     and accepts every body encoding/json accepts but for a malformed
//     apiVersion, which it refuses as controller-runtime does;
//   - on the canonical form of the body (what the apiserver sends: the review
//     encoding/json reads, written back by encoding/json), reviewServer hands
//     the webhook the same request as controller-runtime and answers the same
//     bytes.
//
// The raw body is not compared with controller-runtime directly: its decoder
// matches keys case-sensitively and encoding/json does not, a difference the
// apiserver's canonical JSON never shows.
func FuzzReviewServer(f *testing.F) {
	for _, job := range sampleTrainJobs(f) {
		f.Add(reviewOf(admissionv1.Create, job))
	}
	f.Add(reviewOf(admissionv1.Update, fixtureTrainJob()))
	for seed := range int64(6) {
		f.Add(randomReview(seed))
	}
	for _, body := range []string{
		`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x","name":"ab","object":null}}`,
		`{"apiVersion":"admission.k8s.io/v2","kind":"AdmissionReview","request":{"uid":"x"}}`,
		// A malformed apiVersion: controller-runtime refuses it, reviewServer
		// answered it (fixed in serve.go).
		`{"apiVersion":"a/b/c","kind":"AdmissionReview","request":{"uid":"x"}}`,
		`{"kind":"AdmissionReview","request":{"uid":"x","dryRun":true,"options":{}}}`,
		`{"request":null}`,
		`{"request":{"uid":7}}`,
		`{"request":`,
		``,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, raw := serveFuzz(body)
		checkAnswer(t, raw)

		var ref admissionv1.AdmissionReview
		if stdjson.Unmarshal(body, &ref) != nil {
			return
		}
		_, gvErr := schema.ParseGroupVersion(ref.APIVersion)
		// goccy/go-json stands in for encoding/json: same reading, and nothing
		// encoding/json reads is refused. Only for what the apiserver can send:
		// valid UTF-8 (encoding/json reads invalid bytes in strings as U+FFFD,
		// goccy/go-json v0.10.6 keeps them:
		// testdata/fuzz/FuzzReviewServer/33c3c098f8d0d363) and the field
		// names' case (caseVariantKey).
		if utf8.Valid(body) && !caseVariantKey(body, reflect.TypeFor[admissionv1.AdmissionReview](), trainJobType) {
			gvk, req, err := decodeReview(body)
			switch {
			case gvErr != nil && err == nil:
				t.Fatalf("decodeReview reads a review with a malformed apiVersion (%v)\nbody: %q", gvErr, body)
			case gvErr != nil:
				// refused, as controller-runtime refuses it
			case err != nil:
				t.Fatalf("decodeReview refuses a review encoding/json reads: %v\nbody: %q", err, body)
			default:
				var refReq admission.Request
				if ref.Request != nil {
					refReq.AdmissionRequest = *ref.Request
				}
				if !equality.Semantic.DeepEqual(refReq, req) {
					t.Fatalf("decodeReview reads another request than encoding/json (-encoding/json +decodeReview):\n%s\nbody: %q", cmp.Diff(refReq, req), body)
				}
				if refGVK := ref.GroupVersionKind(); !refGVK.Empty() && refGVK != gvk {
					t.Fatalf("decodeReview reads version %v, encoding/json %v\nbody: %q", gvk, refGVK, body)
				}
			}
		}

		// The canonical form is compared with controller-runtime byte for byte.
		canonical, err := stdjson.Marshal(ref)
		if err != nil {
			return // nothing the apiserver could send (e.g. an object that is not JSON)
		}
		want, got := serveFuzz(canonical)
		checkAnswer(t, got)
		if (want.req == nil) != (got.req == nil) {
			t.Fatalf("controller-runtime asked the webhook: %t, reviewServer: %t\ncanonical body: %s", want.req != nil, got.req != nil, canonical)
		}
		if want.req != nil && !equality.Semantic.DeepEqual(*want.req, *got.req) {
			t.Fatalf("the webhook got another request (-controller-runtime +reviewServer):\n%s\ncanonical body: %s", cmp.Diff(*want.req, *got.req), canonical)
		}
		if want.rec.Code != got.rec.Code || want.rec.Body.String() != got.rec.Body.String() {
			t.Fatalf("answers differ:\ncontroller-runtime: %d %s\nreviewServer:       %d %s\ncanonical body: %s", want.rec.Code, want.rec.Body, got.rec.Code, got.rec.Body, canonical)
		}
	})
}

// served is one server's answer and the request its webhook was given (nil
// when the body was refused before the webhook was asked).
type served struct {
	rec *httptest.ResponseRecorder
	req *admission.Request
}

// serveFuzz sends body to controller-runtime's Webhook.ServeHTTP and to
// reviewServer, each with a handler that records whether it was asked.
func serveFuzz(body []byte) (want, got served) {
	send := func(wrap func(admission.Handler) http.Handler) served {
		h := &askedHandler{}
		r := httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		wrap(h).ServeHTTP(rec, r)
		return served{rec: rec, req: h.asked()}
	}
	want = send(func(h admission.Handler) http.Handler { return &admission.Webhook{Handler: h} })
	got = send(func(h admission.Handler) http.Handler { return reviewServer{&admission.Webhook{Handler: h}} })
	return want, got
}

// askedHandler answers like recordingHandler (from the request, so a wrongly
// decoded request shows in the answer) and remembers that it was asked.
type askedHandler struct {
	recordingHandler
	once sync.Once
	req  *admission.Request
}

func (h *askedHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	h.once.Do(func() { h.req = &req })
	return h.recordingHandler.Handle(ctx, req)
}

func (h *askedHandler) asked() *admission.Request { return h.req }

// checkAnswer: reviewServer answered an AdmissionReview with a response; for
// the request's UID when the webhook was asked, else a 4xx refusal with a reason.
func checkAnswer(t *testing.T, s served) {
	t.Helper()
	if s.rec.Code != http.StatusOK {
		t.Fatalf("HTTP status %d, want 200 (errors go in the review)", s.rec.Code)
	}
	var review admissionv1.AdmissionReview
	if err := stdjson.Unmarshal(s.rec.Body.Bytes(), &review); err != nil || review.Response == nil {
		t.Fatalf("the answer is not an AdmissionReview with a response (%v): %s", err, s.rec.Body)
	}
	resp := review.Response
	if s.req != nil {
		// As written in JSON: a UID in invalid UTF-8 (never the apiserver's)
		// is answered with U+FFFD for the bad bytes, as controller-runtime does.
		if want := asJSON(s.req.UID); resp.UID != want {
			t.Fatalf("answer UID %q, request UID %q", resp.UID, want)
		}
		return
	}
	if resp.Allowed || resp.Result == nil || resp.Result.Code < 400 || resp.Result.Code > 499 || resp.Result.Message == "" {
		t.Fatalf("a refused body got %s, want a 4xx refusal with a message", s.rec.Body)
	}
}

// asJSON is s as JSON carries it (invalid UTF-8 replaced).
func asJSON[T ~string](s T) T {
	var out T
	b, _ := stdjson.Marshal(s)
	_ = stdjson.Unmarshal(b, &out)
	return out
}

// randomReview is a randomly filled review as TestReviewServerMatchesControllerRuntime
// builds them: odd strings, objects present, null and absent.
func randomReview(seed int64) []byte {
	var req admissionv1.AdmissionRequest
	fixtures.RandomFiller(seed).Funcs(randomRawExtension).Fill(&req)
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"}, Request: &req}
	body, err := stdjson.Marshal(review)
	if err != nil {
		panic(err)
	}
	return body
}
