package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// The DefaultTolerationSeconds plugin adds a 300 s NoExecute toleration of
// not-ready and of unreachable, each unless the pod tolerates that taint
// already; the RuntimeClass's scheduling tolerations come after.
func TestAdmittedTolerations(t *testing.T) {
	notReady := func(s int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(s)}
	}
	unreachable := func(s int64) corev1.Toleration {
		return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(s)}
	}
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	everything := corev1.Toleration{Operator: corev1.TolerationOpExists}
	for name, tc := range map[string]struct {
		pod, runtimeClass, want []corev1.Toleration
	}{
		"none":                                {want: []corev1.Toleration{notReady(300), unreachable(300)}},
		"own not-ready kept":                  {pod: []corev1.Toleration{notReady(10)}, want: []corev1.Toleration{notReady(10), unreachable(300)}},
		"a toleration of every taint":         {pod: []corev1.Toleration{everything}, want: []corev1.Toleration{everything}},
		"NoSchedule tolerations count not":    {pod: []corev1.Toleration{gpu}, want: []corev1.Toleration{gpu, notReady(300), unreachable(300)}},
		"the RuntimeClass's tolerations last": {runtimeClass: []corev1.Toleration{gpu}, want: []corev1.Toleration{notReady(300), unreachable(300), gpu}},
	} {
		t.Run(name, func(t *testing.T) {
			got := AdmittedTolerations(&corev1.PodSpec{Tolerations: tc.pod}, tc.runtimeClass)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// admitServiceAccount is the ServiceAccount admission plugin on a new pod.
func TestAdmitServiceAccountAsTheServiceAccountPlugin(t *testing.T) {
	accounts := func(names ...string) []corev1.ServiceAccount {
		var out []corev1.ServiceAccount
		for _, n := range names {
			out = append(out, corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
		return out
	}
	cases := map[string]struct {
		accounts []corev1.ServiceAccount
		named    string
		want     string // the pod's ServiceAccount after admission
		problem  string
	}{
		"none known: taken as named":         {named: "trainer", want: "trainer"},
		"a pod naming none runs as default":  {accounts: accounts("default"), want: "default"},
		"default is not judged":              {accounts: accounts("other"), want: "default"},
		"one that exists":                    {accounts: accounts("default", "trainer"), named: "trainer", want: "trainer"},
		"one that does not exist is refused": {accounts: accounts("default"), named: "trainer", want: "trainer", problem: "error looking up service account trainer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAdmissionContext(nil, nil).withServiceAccounts(tc.accounts)
			pod := &corev1.Pod{Spec: corev1.PodSpec{ServiceAccountName: tc.named}}
			errs := a.admitServiceAccount(pod, field.NewPath("spec"))
			expectAdmitted(t, pod.Spec.ServiceAccountName, tc.want, errs, "spec.serviceAccountName", tc.problem)
		})
	}
}

// expectAdmitted checks one pod through one admission step: the name it has
// after (got, want) and its problems (one at field containing problem, or
// none when problem is "").
func expectAdmitted(t *testing.T, got, want string, errs field.ErrorList, fieldPath, problem string) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %q, want %q", fieldPath, got, want)
	}
	switch {
	case problem == "" && len(errs) > 0:
		t.Errorf("unexpected problems %v", errs)
	case problem != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), problem) || errs[0].Field != fieldPath):
		t.Errorf("problems %v, want one at %s containing %q", errs, fieldPath, problem)
	}
}
