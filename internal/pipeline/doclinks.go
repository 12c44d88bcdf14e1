package pipeline

import "sync/atomic"

// DefaultDocsBaseURL is where denials link to by default: the repository's
// docs folder. mpiguard serve --docs-base-url points them at a mirror (an
// air-gapped cluster's) or a fork.
const DefaultDocsBaseURL = "https://github.com/mpiguard/mpiguard/blob/main/docs/"

// PolicyDocs is, per policy (and per name that denies like one), the docs
// section that explains its denials, relative to the docs base URL. A denial
// of a policy not listed (one an admin added at run time) has no link.
// TestPolicyDocsAnchors fails when a file or heading here does not exist in
// docs/, or an embedded policy has no entry.
var PolicyDocs = map[string]string{
	"aggregate-quota":     "quota.md#a-quota-relevant-decision-step-by-step",
	"object-quota":        "quota.md#object-counts",
	"slots-gpus":          "policies.md#the-policies",
	"max-duration":        "policies.md#the-policies",
	"data-residency":      "policies.md#the-policies",
	"istio-opt-out":       "policies.md#the-policies",
	"mpiguard-entry":      "operations.md#mpiguards-runtime-patch-entry",
	"runtime-constraints": "runtimes.md#runtime-constraints",
	"rendered-pods":       "policies.md#the-policies",
	"pod-security":        "runtimes.md#pod-security-openshift-what-each-runtime-needs-from-the-platform",
	"worker-image":        "runtimes.md#a-runtime-for-your-own-image",
	"gang-scheduling":     "runtimes.md#gang-variants-what-the-platform-team-configures",
	"node-capacity":       "troubleshooting.md#a-job-that-does-not-fit-the-nodes",
	"quota-reservation":   "quota.md#what-you-see",
	"runtime-template":    "runtimes.md#template-validation",
}

var docsBaseURL atomic.Pointer[string]

// SetDocsBaseURL sets the base URL of the links denials end with; "" turns
// them off. It ends with a slash (one is added when missing).
func SetDocsBaseURL(u string) {
	if u != "" && u[len(u)-1] != '/' {
		u += "/"
	}
	docsBaseURL.Store(&u)
}

// DocsLink is the URL of the docs section that explains policy's denials; ""
// when it has none or links are off.
func DocsLink(policy string) string {
	base := DefaultDocsBaseURL
	if p := docsBaseURL.Load(); p != nil {
		base = *p
	}
	rel, ok := PolicyDocs[policy]
	if !ok || base == "" {
		return ""
	}
	return base + rel
}

// WithDocsLink is msg ending with the docs section that explains policy's
// denials (DocsLink), or msg as it is when there is none.
func WithDocsLink(policy, msg string) string {
	if link := DocsLink(policy); link != "" {
		return msg + " (see " + link + ")"
	}
	return msg
}
