// Package personas proves, through a real kube-apiserver that enforces RBAC,
// what the persona ClusterRoles config/default ships (config/rbac/personas.yaml,
// docs/operations.md "Roles for teams") let each kind of user do: every
// request is made as an impersonated user bound the way docs/operations.md
// says, and every refusal checked is the apiserver's RBAC answer (`User ...
// cannot <verb> resource ...`), not a webhook's. The roles are created as
// config/default renders them, read from config/ at the start of the suite;
// kube-controller-manager's clusterrole-aggregation controller runs, so the
// built-in edit, view and admin ClusterRoles include them as in a cluster.
package personas

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

// prefix is config/default's namePrefix.
const prefix = "mpiguard-"

func TestPersonas(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Personas")
}

var _ = BeforeSuite(func(ctx context.Context) {
	env = framework.StartSuite(context.Background(), framework.Options{
		Name: "personas",
		// The built-in edit, view and admin roles take in the personas' rules
		// only through this controller, as in a cluster.
		KubeControllers: []string{"clusterrole-aggregation"},
	})
	shipped, err := framework.KustomizeBuild("config/default")
	Expect(err).NotTo(HaveOccurred())
	var roles int
	for _, o := range shipped {
		if o.GetKind() != "ClusterRole" {
			continue
		}
		Expect(env.Client.Create(ctx, o.DeepCopy())).To(Succeed(), "creating ClusterRole %s as config/default renders it", o.GetName())
		roles++
	}
	Expect(roles).To(BeNumerically(">", 6), "config/default renders %d ClusterRoles; want mpiguard's and the personas'", roles)
}, NodeTimeout(framework.SuiteStartTimeout))

// as returns a client that makes every request as user, in groups: the
// apiserver authorizes each as that user's (impersonation by the suite's
// admin, who may impersonate anyone).
func as(user string, groups ...string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// bindInNamespace binds ClusterRole role to user in namespace ns, as
// `kubectl create rolebinding NAME --clusterrole=ROLE --user=USER -n NS` does.
func bindInNamespace(ctx context.Context, ns, role, user string) {
	GinkgoHelper()
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}},
	}
	Expect(env.Client.Create(ctx, rb)).To(Succeed())
}

// bindClusterWide binds ClusterRole role to user in every namespace, as
// `kubectl create clusterrolebinding` does.
func bindClusterWide(ctx context.Context, role, user string) {
	GinkgoHelper()
	bindClusterWideSubject(ctx, role, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "User", Name: user})
}

// bindClusterWideGroup binds ClusterRole role to group in every namespace.
func bindClusterWideGroup(ctx context.Context, role, group string) {
	GinkgoHelper()
	bindClusterWideSubject(ctx, role, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: "Group", Name: group})
}

func bindClusterWideSubject(ctx context.Context, role string, subject rbacv1.Subject) {
	GinkgoHelper()
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + strings.ToLower(subject.Kind) + "-" + subject.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{subject},
	}
	Expect(env.Client.Create(ctx, crb)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, crb)).To(Succeed()) })
}

// expectRBACRefusal asserts that err is the apiserver's RBAC refusal of user
// doing verb on resource: a 403 whose message is the authorizer's, not a
// webhook's denial (also a 403).
func expectRBACRefusal(err error, user, verb, resource string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "%s was allowed to %s %s", user, verb, resource)
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a 403, got %v", err)
	want := fmt.Sprintf("User %q cannot %s resource %q", user, verb, resource)
	Expect(err.Error()).To(ContainSubstring(want), "want the RBAC authorizer's refusal")
	Expect(strings.Contains(err.Error(), "admission webhook")).To(BeFalse())
}

// dryRun makes a write that is authorized and admitted but not stored: the
// positive controls need the permission, not the object.
var dryRun = client.DryRunAll

// report is an openreports Report in namespace ns.
func report(ns, name string) *unstructured.Unstructured {
	r := &unstructured.Unstructured{}
	r.SetAPIVersion("openreports.io/v1alpha1")
	r.SetKind("Report")
	r.SetNamespace(ns)
	r.SetName(name)
	return r
}
