package networkpolicies

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestOwnershipOf(t *testing.T) {
	ref := func(apiVersion, kind, name, uid string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: k8stypes.UID(uid), Controller: ptr.To(true)}}
	}
	cases := map[string]struct {
		meta metav1.ObjectMeta
		want ownership
	}{
		"controlled by this job": {
			meta: metav1.ObjectMeta{OwnerReferences: ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "pi", "uid-1")},
			want: ownedByJob,
		},
		"controlled by an earlier job of the same name": {
			meta: metav1.ObjectMeta{OwnerReferences: ref("trainer.kubeflow.org/v1alpha1", "TrainJob", "pi", "uid-0")},
			want: ownedByUs,
		},
		"owner reference removed, our label left": {
			meta: metav1.ObjectMeta{Labels: labels("app.kubernetes.io/managed-by", "mpiguard-networkpolicies")},
			want: ownedByUs,
		},
		"someone's hand-written policy with the job's name": {
			meta: metav1.ObjectMeta{Labels: labels("team", "a")},
			want: foreign,
		},
		"controlled by something else, even with our label": {
			meta: metav1.ObjectMeta{
				Labels:          labels("app.kubernetes.io/managed-by", "mpiguard-networkpolicies"),
				OwnerReferences: ref("apps/v1", "Deployment", "pi", "uid-9"),
			},
			want: foreign,
		},
		"a TrainJob of another API group": {
			meta: metav1.ObjectMeta{OwnerReferences: ref("example.com/v1", "TrainJob", "pi", "uid-0")},
			want: foreign,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ownershipOf(&networkingv1.NetworkPolicy{ObjectMeta: tc.meta}, testJob())
			if got != tc.want {
				t.Errorf("ownershipOf = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestInSync(t *testing.T) {
	want := desiredPolicy(testJob(), Settings{Template: TemplateRestricted, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999}},
		Options{}.withDefaults())
	cases := map[string]struct {
		edit func(p *networkingv1.NetworkPolicy)
		want bool
	}{
		"identical": {edit: func(*networkingv1.NetworkPolicy) {}, want: true},
		"someone added a label and an annotation": {edit: func(p *networkingv1.NetworkPolicy) { p.Labels["x"] = "y"; p.Annotations = labels("a", "b") }, want: true},
		"sshd port edited":                        {edit: func(p *networkingv1.NetworkPolicy) { p.Spec.Ingress[0].Ports[0].Port = nil }, want: false},
		"ingress rule removed":                    {edit: func(p *networkingv1.NetworkPolicy) { p.Spec.Ingress = p.Spec.Ingress[:1] }, want: false},
		"podSelector widened":                     {edit: func(p *networkingv1.NetworkPolicy) { p.Spec.PodSelector = metav1.LabelSelector{} }, want: false},
		"template label changed":                  {edit: func(p *networkingv1.NetworkPolicy) { p.Labels[TemplateLabel] = "off" }, want: false},
		"owner reference removed":                 {edit: func(p *networkingv1.NetworkPolicy) { p.OwnerReferences = nil }, want: false},
		"owner reference no longer controller":    {edit: func(p *networkingv1.NetworkPolicy) { p.OwnerReferences[0].Controller = ptr.To(false) }, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			have := want.DeepCopy()
			tc.edit(have)
			if got := inSync(have, want); got != tc.want {
				t.Errorf("inSync = %v, want %v; diff (-want +have):\n%s", got, tc.want, cmp.Diff(want, have))
			}
		})
	}
}

func TestFingerprintFollowsSpec(t *testing.T) {
	s := Settings{Template: TemplateRestricted, SSHPort: 2222, WorkerPorts: PortRange{50000, 50999}}
	a := desiredPolicy(testJob(), s, Options{}.withDefaults())
	if fingerprint(a) != fingerprint(a.DeepCopy()) {
		t.Error("fingerprint differs for equal policies")
	}
	s.WorkerPorts = PortRange{50000, 50998}
	if fingerprint(a) == fingerprint(desiredPolicy(testJob(), s, Options{}.withDefaults())) {
		t.Error("fingerprint unchanged although the worker range changed")
	}
}
