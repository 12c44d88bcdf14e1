package rbac

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("mpiguard's metrics endpoint", func() {
	// scrape GETs /metrics from replica 0 over HTTPS (the certificate is
	// self-signed, as shipped: the ServiceMonitor skips verification) with
	// an optional bearer token.
	scrape := func(ctx context.Context, token string) (int, string) {
		GinkgoHelper()
		addr := env.Replicas[0].MetricsAddr
		Expect(addr).NotTo(BeEmpty())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // self-signed, as shipped
		resp, err := c.Do(req)
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, string(body)
	}
	newServiceAccount := func(ctx context.Context, ns, name string) (*corev1.ServiceAccount, string) {
		GinkgoHelper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		Expect(env.Client.Create(ctx, sa)).To(Succeed())
		token, err := serviceAccountToken(ctx, env, sa)
		Expect(err).NotTo(HaveOccurred())
		return sa, token
	}

	It("serves HTTPS only, to callers the apiserver authenticates and allows to get /metrics", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		prometheus, promToken := newServiceAccount(ctx, ns, "prometheus")
		_, strangerToken := newServiceAccount(ctx, ns, "stranger")
		// As docs/operations.md tells operators: bind the shipped
		// metrics-reader ClusterRole to Prometheus' ServiceAccount.
		reader := shippedObject("ClusterRole", "mpiguard-metrics-reader")
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-mpiguard-metrics-" + ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader.GetName()},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: prometheus.Name}},
		}
		Expect(env.Client.Create(ctx, binding)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			Expect(client.IgnoreNotFound(env.Client.Delete(ctx, binding))).To(Succeed())
		})

		By("refusing a caller without a token (401)")
		code, _ := scrape(ctx, "")
		Expect(code).To(Equal(http.StatusUnauthorized))

		By("refusing an authenticated caller without get on /metrics (403)")
		code, body := scrape(ctx, strangerToken)
		Expect(code).To(Equal(http.StatusForbidden), body)

		By("serving the metrics-reader (mpiguard's identity creates the TokenReview and SubjectAccessReview)")
		Eventually(func(g Gomega) {
			code, body := scrape(ctx, promToken)
			g.Expect(code).To(Equal(http.StatusOK), body)
			g.Expect(body).To(ContainSubstring("mpiguard_policy_set_info"))
		}).WithTimeout(timeout).Should(Succeed())

		By("serving no metrics over plain HTTP, not even to the metrics-reader")
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+env.Replicas[0].MetricsAddr+"/metrics", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+promToken)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err == nil {
			// Go's TLS server answers a plain HTTP request with 400, or
			// resets the connection before the client reads it.
			_ = resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
		}
	})
})
