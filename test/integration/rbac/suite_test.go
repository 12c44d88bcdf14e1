// Package rbac runs the whole of mpiguard (app.Setup with app.DefaultOptions:
// webhooks, policy reload, quota reservations, the runtime publisher, the
// RuntimeTest and NetworkPolicy controllers, authenticated metrics) as the
// ServiceAccount config/default installs, bound to exactly the RBAC that
// config/default renders (the ClusterRole and Role `make manifests` generates
// from the +kubebuilder:rbac markers, the leader-election Role, the metrics
// roles), against a real kube-apiserver that enforces RBAC, as two replicas
// with leader election. A verb missing from the markers shows up here as a
// cache that never syncs or a write that is forbidden, not in production; a
// right mpiguard must not have shows up as a check that passes where it
// should be refused.
package rbac

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/internal/devcluster"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

// shipped is what config/default renders; mpiguard is the identity it
// installs for mpiguard's pods.
var (
	shipped  []*unstructured.Unstructured
	mpiguard *corev1.ServiceAccount
)

const timeout = 30 * time.Second

func TestRBAC(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "RBAC")
}

var _ = BeforeSuite(func(ctx context.Context) {
	shipped = kustomizeBuild("config/default")
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "rbac",
		// The Deployment's topology: two pods, leader election in the
		// namespace's Lease (the leader-election Role).
		Replicas:      2,
		Metrics:       true,
		ManagerConfig: runAsShippedServiceAccount,
	})
}, NodeTimeout(framework.SuiteStartTimeout))

// runAsShippedServiceAccount creates the ServiceAccount and every RBAC object
// config/default renders, as rendered, and returns a rest.Config that
// authenticates as that ServiceAccount (a bound token, as a pod's).
func runAsShippedServiceAccount(ctx context.Context, e *devcluster.Env) (*rest.Config, error) {
	var rbacKinds int
	for _, o := range shipped {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
		default:
			continue
		}
		if o.GetNamespace() != "" && o.GetNamespace() != e.PolicyNamespace {
			return nil, fmt.Errorf("config/default renders %s %s into namespace %s, but the suite's mpiguard runs in %s", o.GetKind(), o.GetName(), o.GetNamespace(), e.PolicyNamespace)
		}
		if err := e.Client.Create(ctx, o.DeepCopy()); err != nil {
			return nil, fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "ServiceAccount" {
			mpiguard = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: o.GetNamespace(), Name: o.GetName()}}
		}
		rbacKinds++
	}
	if mpiguard == nil || rbacKinds < 5 {
		return nil, fmt.Errorf("config/default renders %d RBAC objects and ServiceAccount %v; want mpiguard's ServiceAccount, roles and bindings", rbacKinds, mpiguard)
	}
	return serviceAccountConfig(ctx, &framework.Env{Env: e}, mpiguard)
}

// serviceAccountConfig returns a rest.Config that authenticates with a bound
// token of sa, and nothing else of the admin's credentials.
func serviceAccountConfig(ctx context.Context, e *framework.Env, sa *corev1.ServiceAccount) (*rest.Config, error) {
	token, err := serviceAccountToken(ctx, e, sa)
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token
	return cfg, nil
}

func serviceAccountToken(ctx context.Context, e *framework.Env, sa *corev1.ServiceAccount) (string, error) {
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](2 * 3600)}}
	if err := e.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	return tr.Status.Token, nil
}

// kustomizeBuild renders a kustomization the way `kustomize build` does.
func kustomizeBuild(dir string) []*unstructured.Unstructured {
	GinkgoHelper()
	objs, err := framework.KustomizeBuild(dir)
	Expect(err).NotTo(HaveOccurred())
	return objs
}

// shippedObject returns the rendered object of that kind and name.
func shippedObject(kind, name string) *unstructured.Unstructured {
	GinkgoHelper()
	for _, o := range shipped {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	Fail(fmt.Sprintf("config/default renders no %s %s", kind, name))
	return nil
}
