package framework

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// TrainJobReview is the AdmissionRequest the apiserver would send for op on
// job by user (old: the stored object of an UPDATE, else nil).
func TrainJobReview(op admissionv1.Operation, job, old *trainer.TrainJob, user string) (*admissionv1.AdmissionRequest, error) {
	raw, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("review-" + job.Name),
		Kind:      metav1.GroupVersionKind{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Kind: trainer.TrainJobKind},
		Resource:  metav1.GroupVersionResource{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Resource: "trainjobs"},
		Name:      job.Name,
		Namespace: job.Namespace,
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: user},
		Object:    runtime.RawExtension{Raw: raw},
	}
	if old != nil {
		if req.OldObject.Raw, err = json.Marshal(old); err != nil {
			return nil, err
		}
	}
	return req, nil
}

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
