package framework

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PostReview sends an AdmissionReview with req straight to a webhook server
// at addr (a replica's address) and path, as a caller other than the
// apiserver would: what mpiguard does with a review nobody checked. certs
// are the client certificates to present (none without --client-ca).
func PostReview(addr, path string, req *admissionv1.AdmissionRequest, certs []tls.Certificate) (*admissionv1.AdmissionResponse, error) {
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		// Trusting mpiguard's serving certificate is not what is tested.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}, //nolint:gosec // see above
	}}
	res, err := c.Post("https://"+addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer func() { _ = res.Body.Close() }()
	var answer admissionv1.AdmissionReview
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		return nil, err
	}
	if answer.Response == nil {
		return nil, fmt.Errorf("answer without a response (HTTP %d)", res.StatusCode)
	}
	return answer.Response, nil
}
