package render

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// defaultServiceAccount is the ServiceAccount the ServiceAccount admission
// plugin gives a pod that names none. kube-controller-manager's
// serviceaccount controller creates it in every namespace.
const defaultServiceAccount = "default"

// withServiceAccounts is a with the ServiceAccounts of the job's namespace.
func (a *admissionContext) withServiceAccounts(accounts []corev1.ServiceAccount) *admissionContext {
	a.serviceAccounts = accounts
	return a
}

// admitServiceAccount is the ServiceAccount admission plugin on a new pod: a
// pod naming no ServiceAccount runs as "default"; a pod naming one that does
// not exist in its namespace is refused ("error looking up service account").
// Only a ServiceAccount the pod names is judged, and only when the
// namespace's ServiceAccounts are known (none: not known): "default" is
// created in every namespace by the serviceaccount controller moments after
// the namespace, so its absence at submit says nothing about the pods.
func (a *admissionContext) admitServiceAccount(pod *corev1.Pod, podPath *field.Path) field.ErrorList {
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = defaultServiceAccount
	}
	name := pod.Spec.ServiceAccountName
	if len(a.serviceAccounts) == 0 || name == defaultServiceAccount {
		return nil
	}
	if slices.ContainsFunc(a.serviceAccounts, func(sa corev1.ServiceAccount) bool { return sa.Name == name }) {
		return nil
	}
	return field.ErrorList{field.NotFound(podPath.Child("serviceAccountName"),
		name+": the ServiceAccount admission plugin rejects pods whose ServiceAccount does not exist in their namespace (error looking up service account "+name+"); "+hangHint+"; create the ServiceAccount or name one that exists")}
}

// defaultTolerationSeconds is how long the DefaultTolerationSeconds
// admission plugin lets a pod stay on a not-ready or unreachable node (its
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds default).
const defaultTolerationSeconds = 300

// AdmittedTolerations are the tolerations of a pod with spec as the
// apiserver's default admission chain stores it, in the chain's order:
// DefaultTolerationSeconds adds a NoExecute toleration of the
// node.kubernetes.io/not-ready and node.kubernetes.io/unreachable taints for
// 300 s unless the pod already tolerates them, then the RuntimeClass plugin
// adds the tolerations of the pod's RuntimeClass's scheduling.
func AdmittedTolerations(spec *corev1.PodSpec, runtimeClassTolerations []corev1.Toleration) []corev1.Toleration {
	out := slices.Clone(spec.Tolerations)
	notReady, unreachable := false, false
	for _, t := range spec.Tolerations {
		noExecute := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		notReady = notReady || noExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == "")
		unreachable = unreachable || noExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == "")
	}
	if !notReady {
		out = append(out, corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](defaultTolerationSeconds)})
	}
	if !unreachable {
		out = append(out, corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](defaultTolerationSeconds)})
	}
	return append(out, runtimeClassTolerations...)
}
