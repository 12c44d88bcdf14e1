// Package rbac runs mpiguard's NetworkPolicy controller under the ClusterRole
// that `make manifests` generates from its +kubebuilder:rbac markers
// (config/rbac/role.yaml), as a user bound to nothing else, against a real
// kube-apiserver that enforces RBAC. A missing verb shows up here as a
// controller that never syncs or cannot write, not in production.
package rbac

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/networkpolicies"
	"github.com/mpiguard/mpiguard/test/framework"
)

// controllerUser is who the controller runs as; only the generated role is bound to it.
const controllerUser = "mpiguard-networkpolicies-rbac-test"

var env *framework.Env

func TestNetworkPoliciesRBAC(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "NetworkPolicies RBAC")
}

var _ = BeforeSuite(func(ctx context.Context) {
	// mpiguard as shipped (webhooks included) except the NetworkPolicy controller,
	// which runs below under the generated role instead of as admin.
	components := app.DefaultOptions()
	components.NetworkPolicies.Enabled = false
	env = framework.StartSuite(context.Background(), framework.Options{Name: "networkpolicies-rbac", Components: &components})

	role := generatedClusterRole()
	role.Name = controllerUser
	Expect(env.Client.Create(ctx, role)).To(Succeed())
	Expect(env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: controllerUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controllerUser}},
	})).To(Succeed())

	user, err := env.Testenv.AddUser(envtest.User{Name: controllerUser}, env.Config)
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(user.Config(), ctrl.Options{
		Scheme:                 app.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(networkpolicies.SetupWithManager(mgr, networkpolicies.DefaultOptions())).To(Succeed())

	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	DeferCleanup(func() {
		cancel()
		Expect(<-done).To(Succeed())
	})
	// A list or watch the role does not grant keeps the cache from syncing.
	Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue(), "the controller's cache did not sync under the generated role")
}, NodeTimeout(framework.SuiteStartTimeout))

// generatedClusterRole reads the ClusterRole controller-gen writes from the markers.
func generatedClusterRole() *rbacv1.ClusterRole {
	GinkgoHelper()
	path := filepath.Join(framework.RepoRoot(), "config", "rbac", "role.yaml")
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred(), "run 'make manifests' to generate %s", path)
	var role rbacv1.ClusterRole
	doc := strings.TrimPrefix(strings.TrimSpace(string(data)), "---")
	Expect(yaml.UnmarshalStrict([]byte(doc), &role)).To(Succeed(), "parsing %s", path)
	Expect(role.Kind).To(Equal("ClusterRole"), fmt.Sprintf("%s holds one ClusterRole", path))
	return &role
}
