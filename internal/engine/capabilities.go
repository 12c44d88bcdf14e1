package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The policy sandbox. Policies come from ConfigMaps as well as from the
// binary, and they run inside mpiguard's pod, over every TrainJob (its env
// included). They are compiled with OPA's capabilities minus the builtins
// below, so a module calling one is rejected when it is loaded, with file and
// row, like any other compile error. What stays is pure computation over the
// input and the parameters: a decision depends on nothing else, and the same
// TrainJob is decided the same way on every replica, every time.
//
// The base rule is OPA's own metadata: every builtin OPA marks
// Nondeterministic is refused (http.send, net.lookup_ip_addr, opa.runtime,
// time.now_ns, rand.intn, uuid.rfc4122, io.jwt.decode_verify and
// encode_sign*, json.match_schema and verify_schema, which fetch remote
// $refs). sandboxRefused says why for each, and adds builtins OPA does not
// mark but that reach outside the input (providers.aws.sign_req,
// crypto.x509.parse_and_verify_certificates*). Kept on purpose:
//   - net.cidr_* are arithmetic on addresses: no lookup, no I/O (and
//     net.cidr_expand stops at the evaluation deadline like numbers.range);
//   - io.jwt.verify_* and io.jwt.decode check or read a token they are given,
//     with no clock and no key fetching;
//   - time.parse_*, time.format, time.date, ... compute on the time they are
//     given; only time.now_ns reads the clock;
//   - print and trace do nothing when mpiguard evaluates: the engine never
//     enables print statements (the compiler erases the calls) and never
//     attaches a tracer. They help in `opa test` and `opa eval --explain`.
//
// OPA upgrades: every builtin of a new OPA version is allowed unless OPA
// marks it non-deterministic or it is listed here. The allowed set is also
// written to test/tools/opa-capabilities.json (for `opa check` and
// `opa test`), and a test fails until that file is regenerated, so each
// upgrade's new builtins show up in a diff someone reviews.
var sandboxRefused = map[string]string{
	"http.send":              "it makes network requests from mpiguard's pod",
	"net.lookup_ip_addr":     "it makes DNS queries from mpiguard's pod",
	"providers.aws.sign_req": "it signs requests for http.send, which the sandbox refuses",
	"opa.runtime":            "it exposes mpiguard's environment variables and configuration",
	"time.now_ns":            "it reads the clock: the same TrainJob would be decided differently over time",
	"rand.intn":              "it is random",
	"uuid.rfc4122":           "it is random",
	"io.jwt.decode_verify":   "it reads the clock (token expiry); verify with io.jwt.verify_* instead",
	"io.jwt.encode_sign":     "it is random (signature nonces)",
	"io.jwt.encode_sign_raw": "it is random (signature nonces)",
	"json.match_schema":      "it fetches a schema's remote $refs over the network",
	"json.verify_schema":     "it fetches a schema's remote $refs over the network",
	// Without an explicit CurrentTime, Go's x509 verification reads the
	// clock; OPA does not mark these non-deterministic.
	"crypto.x509.parse_and_verify_certificates":              "it reads the clock (certificate validity)",
	"crypto.x509.parse_and_verify_certificates_with_options": "it reads the clock (certificate validity) unless told the time",
}

// refusedBecause says why the sandbox refuses builtin b; "" when it allows it.
func refusedBecause(b *ast.Builtin) string {
	if why, ok := sandboxRefused[b.Name]; ok {
		return why
	}
	if b.Nondeterministic {
		return "its result is not determined by its arguments (OPA marks it non-deterministic)"
	}
	return ""
}

// Capabilities are the capabilities mpiguard compiles policies with: this
// OPA version's, without the builtins the sandbox refuses. Each call returns
// a fresh copy the caller may change.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	caps.Builtins = slices.DeleteFunc(caps.Builtins, func(b *ast.Builtin) bool { return refusedBecause(b) != "" })
	return caps
}

// RefusedBuiltins lists the builtins of this OPA version the sandbox refuses.
func RefusedBuiltins() []string {
	var names []string
	for _, b := range ast.CapabilitiesForThisVersion().Builtins {
		if refusedBecause(b) != "" {
			names = append(names, b.Name)
		}
	}
	slices.Sort(names)
	return names
}

// undefinedFunction is how OPA's type checker reports a call to a function
// that neither the capabilities nor the modules define; for a refused
// builtin that is the sandbox speaking, and sandboxErrors says so.
const undefinedFunction = "undefined function "

// sandboxErrors returns errs with the errors about refused builtins
// rewritten to name the builtin and the reason; location and code stay as
// OPA set them, other errors are unchanged. errs itself is not modified.
func sandboxErrors(errs ast.Errors) ast.Errors {
	refused := map[string]string{}
	for _, b := range ast.CapabilitiesForThisVersion().Builtins {
		if why := refusedBecause(b); why != "" {
			refused[b.Name] = why
		}
	}
	out := slices.Clone(errs)
	for i, e := range out {
		name, ok := strings.CutPrefix(e.Message, undefinedFunction)
		if !ok {
			continue
		}
		if why, ok := refused[name]; ok {
			c := *e
			c.Message = fmt.Sprintf("builtin %s is not allowed by mpiguard's policy sandbox: %s", name, why)
			out[i] = &c
		}
	}
	return out
}

// SandboxError rewrites err, the ast.Errors of a compiler using Capabilities
// (e.g. OPA's tester), like the engine's own compile errors: a call to a
// refused builtin names the builtin and why the sandbox refuses it. It
// returns the rewritten ast.Errors (without any wrapping of err), or err
// unchanged when it holds none.
func SandboxError(err error) error {
	var errs ast.Errors
	if errors.As(err, &errs) {
		return sandboxErrors(errs)
	}
	return err
}
