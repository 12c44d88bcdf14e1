package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MetricsReaderToken returns a token of a ServiceAccount allowed to get
// /metrics (the manager asks the apiserver: TokenReview, SubjectAccessReview).
func (env *Env) MetricsReaderToken(ctx context.Context) string {
	ginkgo.GinkgoHelper()
	ns := env.Namespace(ctx, nil)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	gomega.Expect(env.Client.Create(ctx, sa)).To(gomega.Succeed())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader-" + ns},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}}}
	for _, o := range []client.Object{role, binding} {
		gomega.Expect(env.Client.Create(ctx, o)).To(gomega.Succeed())
		ginkgo.DeferCleanup(func(ctx context.Context) {
			gomega.Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o))).To(gomega.Succeed())
		})
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	gomega.Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(gomega.Succeed())
	return tr.Status.Token
}

// ScrapeMetricNames GETs the manager's /metrics and returns the names of its samples
// (a histogram's as name_bucket, name_sum and name_count).
func (env *Env) ScrapeMetricNames(ctx context.Context, g gomega.Gomega, token string) map[string]bool {
	addr := env.Replicas[0].MetricsAddr
	g.Expect(addr).NotTo(gomega.BeEmpty(), "the suite serves no metrics (framework.Options.Metrics)")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+token)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed, as shipped
	resp, err := c.Do(req)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(gomega.Equal(http.StatusOK))
	names := map[string]bool{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	g.Expect(s.Err()).NotTo(gomega.HaveOccurred())
	return names
}
