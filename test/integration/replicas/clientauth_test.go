package replicas

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

// clientAuthSpecs prove --client-ca: the suite's apiserver presents a client
// certificate (framework.Options.ClientAuth), and a caller that cannot is
// refused before any review is read.
func clientAuthSpecs() {
	It("answers only callers with the apiserver's client certificate: a forged review from anyone else reserves nothing", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("forged-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		// The whole quota: 4 Workers x 4 GPUs.
		forged := fixtures.TrainJob(ns, "forged", rt.Name).NumNodes(4).NumProcPerNode(4).Obj()

		otherCA, err := framework.NewTestCA("someone-else")
		Expect(err).NotTo(HaveOccurred())
		_, _, otherCAsCert, err := otherCA.Issue(framework.WebhookClientName)
		Expect(err).NotTo(HaveOccurred())
		_, _, wrongName, err := env.WebhookClientCA.Issue("a-tenant-pod")
		Expect(err).NotTo(HaveOccurred())
		_, _, apiserversCert, err := env.WebhookClientCA.Issue(framework.WebhookClientName)
		Expect(err).NotTo(HaveOccurred())

		for _, caller := range []struct {
			name  string
			certs []tls.Certificate
		}{
			{"no client certificate", nil},
			{"a certificate of another CA, with the apiserver's name", []tls.Certificate{otherCAsCert}},
			{"a certificate of the apiserver's CA with another name", []tls.Certificate{wrongName}},
		} {
			for range 3 {
				_, err := postReview(forged, caller.certs, false)
				Expect(err).To(HaveOccurred(), "%s: the webhook answered", caller.name)
			}
		}
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty(), "a refused caller reserved quota")

		// The same review with the apiserver's certificate is answered (a dry
		// run, which reserves nothing): what refused the others is the certificate.
		resp, err := postReview(forged, []tls.Certificate{apiserversCert}, true)
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.UID).To(Equal(types.UID("forged-forged")), "answered: allowed %t, %v", resp.Allowed, resp.Result)

		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "real", rt.Name).NumNodes(4).NumProcPerNode(4).Obj())).
			To(Succeed(), "the tenant's real job gets the whole quota")
	})
}

// postReview sends a CREATE review of job straight to the webhook endpoint, as
// a pod that reaches its port could, presenting certs.
func postReview(job runtime.Object, certs []tls.Certificate, dryRun bool) (*admissionv1.AdmissionResponse, error) {
	GinkgoHelper()
	raw, err := json.Marshal(job)
	Expect(err).NotTo(HaveOccurred())
	meta := job.(metav1.Object)
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("forged-" + meta.GetName()),
			Kind:      metav1.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"},
			Resource:  metav1.GroupVersionResource{Group: "trainer.kubeflow.org", Version: "v1alpha1", Resource: "trainjobs"},
			Name:      meta.GetName(),
			Namespace: meta.GetNamespace(),
			Operation: admissionv1.Create,
			UserInfo:  authenticationv1.UserInfo{Username: "system:serviceaccount:" + meta.GetNamespace() + ":default"},
			Object:    runtime.RawExtension{Raw: raw},
			DryRun:    ptr.To(dryRun),
		},
	}
	body, err := json.Marshal(review)
	Expect(err).NotTo(HaveOccurred())
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		// Trusting mpiguard's serving certificate is not what is tested.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}, //nolint:gosec // see above
	}}
	res, err := client.Post("https://"+env.Proxy.Addr()+trainjob.ValidatePath, "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var answer admissionv1.AdmissionReview
	if err := json.NewDecoder(res.Body).Decode(&answer); err != nil {
		return nil, err
	}
	Expect(answer.Response).NotTo(BeNil())
	return answer.Response, nil
}
