// Package podsecurity predicts what Pod Security admission will say about a
// TrainJob's pods before they exist. The Trainer creates a JobSet, JobSet the
// Jobs and the Job controller the pods; a namespace that enforces a Pod
// Security level refuses pods that break it, and the TrainJob then hangs with
// a FailedCreate event on a Job nobody reads. Evaluated at submit, the same
// verdict becomes a denial (enforce) or an admission warning (warn, audit).
//
// The checks are the apiserver's own: k8s.io/pod-security-admission, at the
// version of the rest of k8s.io, resolves the namespace's
// pod-security.kubernetes.io/<mode>[-version] labels and evaluates each pod
// with its default checks. What this package cannot see: the cluster-wide
// default level of the apiserver's AdmissionConfiguration (a namespace
// without labels is taken as privileged, the upstream default) and its
// exemptions (users, runtime classes, namespaces).
package podsecurity

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Pod is one pod template to judge: a replicated job of the rendered JobSet,
// or of a runtime template.
type Pod struct {
	// ReplicatedJob and Role name it in messages (Role: launcher, worker, other).
	ReplicatedJob string
	Role          string
	// Field is the path of its pod spec, where violations are reported.
	Field    string
	Template *corev1.PodTemplateSpec
}

// Result is how a namespace's Pod Security modes judge a job's pods. It is
// part of the policy input document (input.job.podSecurity); its lists are
// never null.
type Result struct {
	Enforce Mode `json:"enforce"`
	Warn    Mode `json:"warn"`
	Audit   Mode `json:"audit"`
	// Errors are malformed pod-security labels of the namespace, as the
	// apiserver reports them; it then evaluates the mode at restricted:latest
	// (enforce) or skips it (warn, audit), and so does Evaluate.
	Errors []string `json:"errors"`
}

// Mode is one Pod Security mode of the namespace.
type Mode struct {
	// Level is privileged, baseline or restricted; Version "latest" or "v1.N".
	Level   string `json:"level"`
	Version string `json:"version"`
	// Policy is "<level>:<version>", as the apiserver names it in messages.
	Policy     string      `json:"policy"`
	Violations []Violation `json:"violations"`
}

// Violation is one check one pod fails.
type Violation struct {
	ReplicatedJob string `json:"replicatedJob"`
	Role          string `json:"role"`
	Field         string `json:"field"`
	// Reason and Detail are the library's ForbiddenReason and
	// ForbiddenDetail, e.g. "allowPrivilegeEscalation != false" and
	// `container "node" must set securityContext.allowPrivilegeEscalation=false`.
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	// Fix says what to change in the pod template; "" for a reason this
	// package has no specific fix for (the policy then points to the Pod
	// Security Standards).
	Fix string `json:"fix"`
}

// evaluator holds the library's default checks; built once, safe for
// concurrent use (the checks are pure functions of the pod).
var evaluator = mustEvaluator()

func mustEvaluator() policy.Evaluator {
	e, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		// DefaultChecks are the library's own; only a broken build fails here.
		panic("pod-security-admission default checks: " + err.Error())
	}
	return e
}

// Evaluate judges pods under the Pod Security modes the namespace labels set,
// as the apiserver's PodSecurity admission plugin would judge each pod.
func Evaluate(namespaceLabels map[string]string, pods []Pod) Result {
	p, errs := api.PolicyToEvaluate(namespaceLabels, api.Policy{
		Enforce: api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
		Audit:   api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
		Warn:    api.LevelVersion{Level: api.LevelPrivileged, Version: api.LatestVersion()},
	})
	out := Result{Errors: []string{}}
	for _, e := range errs {
		out.Errors = append(out.Errors, e.Error())
	}
	// The apiserver evaluates a level:version once per pod; so does this.
	cache := map[api.LevelVersion][]Violation{}
	mode := func(lv api.LevelVersion) Mode {
		v, ok := cache[lv]
		if !ok {
			v = violations(lv, pods)
			cache[lv] = v
		}
		return Mode{Level: string(lv.Level), Version: lv.Version.String(), Policy: lv.String(), Violations: v}
	}
	out.Enforce, out.Warn, out.Audit = mode(p.Enforce), mode(p.Warn), mode(p.Audit)
	return out
}

func violations(lv api.LevelVersion, pods []Pod) []Violation {
	out := []Violation{}
	for _, pod := range pods {
		for _, r := range Check(lv, &pod.Template.ObjectMeta, &pod.Template.Spec) {
			out = append(out, Violation{
				ReplicatedJob: pod.ReplicatedJob, Role: pod.Role, Field: pod.Field,
				Reason: r.Reason, Detail: r.Detail, Fix: fixes[r.Reason],
			})
		}
	}
	return out
}

// Reason is one check a pod fails: the library's reason and detail.
type Reason struct {
	Reason string
	Detail string
}

// Restricted is the level every curated runtime meets and the one hardened
// clusters (and OpenShift's synced labels) ask for.
var Restricted = api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}

// Check lists the checks of level lv a pod template fails, in the library's
// order; none when it passes.
func Check(lv api.LevelVersion, meta *metav1.ObjectMeta, spec *corev1.PodSpec) []Reason {
	agg := policy.AggregateCheckResults(evaluator.EvaluatePod(lv, meta, spec))
	out := make([]Reason, len(agg.ForbiddenReasons))
	for i := range agg.ForbiddenReasons {
		out[i] = Reason{Reason: agg.ForbiddenReasons[i], Detail: agg.ForbiddenDetails[i]}
	}
	return out
}

// Describe joins reasons the way the apiserver's message does:
// "reason (detail), reason (detail)".
func Describe(reasons []Reason) string {
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = r.Reason
		if r.Detail != "" {
			parts[i] += " (" + r.Detail + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// Fixes says, for each reason, what to change in the pod template; reasons
// without a specific fix are left out.
func Fixes(reasons []Reason) []string {
	var out []string
	for _, r := range reasons {
		if f, ok := fixes[r.Reason]; ok && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// fixes are keyed by the library's ForbiddenReason strings (policy/check_*.go).
var fixes = map[string]string{
	"allowPrivilegeEscalation != false": "set securityContext.allowPrivilegeEscalation: false on every container",
	"unrestricted capabilities":         "set securityContext.capabilities.drop: [ALL] on every container (add: at most NET_BIND_SERVICE)",
	"runAsNonRoot != true":              "set securityContext.runAsNonRoot: true on the pod, with a non-zero runAsUser or an image whose USER is a non-zero UID",
	"runAsUser=0":                       "run as a non-zero runAsUser",
	"seccompProfile":                    "set securityContext.seccompProfile.type: RuntimeDefault on the pod",
	"privileged":                        "remove securityContext.privileged: true",
	"host namespaces":                   "remove hostNetwork, hostPID and hostIPC",
	"hostPath volumes":                  "replace hostPath volumes (by a persistentVolumeClaim, for example)",
	"hostPort":                          "remove hostPort from the container ports",
	"non-default capabilities":          "add no capabilities beyond the default set",
	"restricted volume types":           "use only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected and secret volumes",
}
