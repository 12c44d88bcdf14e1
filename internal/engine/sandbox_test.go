package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
)

// located lists a compile error's errors as "file:row: message".
func located(t *testing.T, err error) []string {
	t.Helper()
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want a *CompileError", err)
	}
	var lines []string
	for _, e := range ce.Errors {
		if e.Location == nil {
			lines = append(lines, e.Message)
			continue
		}
		lines = append(lines, fmt.Sprintf("%s:%d: %s", e.Location.File, e.Location.Row, e.Message))
	}
	return lines
}

// A policy calling a builtin the sandbox refuses is rejected when it is
// loaded, at the call, with the builtin's name and why.
func TestSandboxRefusesBuiltinsAtLoad(t *testing.T) {
	const file = "my-policies/sneaky.rego"
	// policy puts body on row 4 of the module.
	policy := func(body string) string {
		return "package mpiguard.policies.sneaky\n\ndeny contains msg if {\n\t" + body + "\n\tmsg := \"no\"\n}\n"
	}
	refused := func(name, why string) []string {
		return []string{fmt.Sprintf("%s:4: builtin %s is not allowed by mpiguard's policy sandbox: %s", file, name, why)}
	}
	cases := []struct {
		name, body string
		want       []string
	}{
		{"http.send", `http.send({"method": "GET", "url": "http://169.254.169.254/latest/meta-data/"}).status_code == 200`,
			refused("http.send", "it makes network requests from mpiguard's pod")},
		{"net.lookup_ip_addr", `count(net.lookup_ip_addr("kubernetes.default")) > 0`,
			refused("net.lookup_ip_addr", "it makes DNS queries from mpiguard's pod")},
		{"rand.intn", `rand.intn("deny", 2) == 0`, refused("rand.intn", "it is random")},
		{"time.now_ns", `time.now_ns() > 0`,
			refused("time.now_ns", "it reads the clock: the same TrainJob would be decided differently over time")},
		{"uuid.rfc4122", `uuid.rfc4122("x") != ""`, refused("uuid.rfc4122", "it is random")},
		{"opa.runtime", `opa.runtime().env.AWS_SECRET_ACCESS_KEY != ""`,
			refused("opa.runtime", "it exposes mpiguard's environment variables and configuration")},
		{"io.jwt.decode_verify", `io.jwt.decode_verify(input.trainJob.annotations.token, {"secret": "s"})[0]`,
			refused("io.jwt.decode_verify", "it reads the clock (token expiry); verify with io.jwt.verify_* instead")},
		{"json.match_schema", `json.match_schema({}, {"$ref": "http://169.254.169.254/"})[0]`,
			refused("json.match_schema", "it fetches a schema's remote $refs over the network")},
		{"providers.aws.sign_req", `providers.aws.sign_req({}, {}, 0)`,
			refused("providers.aws.sign_req", "it signs requests for http.send, which the sandbox refuses")},
		{"crypto.x509.parse_and_verify_certificates", `crypto.x509.parse_and_verify_certificates("pem")[0]`,
			refused("crypto.x509.parse_and_verify_certificates", "it reads the clock (certificate validity)")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(context.Background(), PolicySet{Modules: map[string]string{file: policy(tc.body)}}, Options{})
			if diff := cmp.Diff(tc.want, located(t, err)); diff != "" {
				t.Errorf("compile errors (-want +got):\n%s", diff)
			}
		})
	}

	// In a helper of lib, and through Load: the error names that file and row,
	// and the serving set does not change.
	e, err := New(context.Background(), demoSet(2, PolicySettings{}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	version := e.Version()
	err = e.Load(context.Background(), PolicySet{Modules: map[string]string{
		"node-limit/node_limit.rego": demoPolicy(2),
		"lib/fetch.rego":             "package mpiguard.lib\n\nfetch(url) := http.send({\"method\": \"GET\", \"url\": url}).body\n",
	}})
	want := "policy compile error: lib/fetch.rego:3: builtin http.send is not allowed by mpiguard's policy sandbox: it makes network requests from mpiguard's pod"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %s", err, want)
	}
	if e.Version() != version {
		t.Errorf("a rejected set replaced the serving one")
	}
}

// Pure builtins stay: computation on what the policy is given.
func TestSandboxAllowsPureBuiltins(t *testing.T) {
	policy := `package mpiguard.policies.pure

deny contains msg if {
	net.cidr_contains("10.0.0.0/8", "10.1.2.3")
	count(net.cidr_expand("10.0.0.0/30")) == 4
	time.parse_rfc3339_ns("2026-01-02T03:04:05Z") == 1767323045000000000
	time.weekday(0) == "Thursday"
	regex.match("^node-[0-9]+$", "node-12")
	io.jwt.decode("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln")[1].sub == "a"
	units.parse_bytes("1Ki") == 1024
	crypto.sha256("x") != ""
	print("print is erased: the engine never enables it")
	trace("trace is a no-op without a tracer")
	msg := sprintf("%d nodes", [input.job.numNodes])
}
`
	e, err := New(context.Background(), PolicySet{Modules: map[string]string{"pure/pure.rego": policy}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := decide(t, e, mpiRequest("a", 3))
	got := make([]string, 0, len(d.Violations))
	for _, v := range d.Violations {
		got = append(got, v.Policy+": "+v.Message)
	}
	if diff := cmp.Diff([]string{"pure: 3 nodes"}, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

// The base rule is OPA's own metadata: every builtin it marks
// non-deterministic is refused. Every name the sandbox refuses on top must be
// a builtin of this OPA version: one OPA renamed would be allowed under its
// new name, and this test (with TestCapabilitiesFile) makes the upgrade fail
// until someone looks.
func TestSandboxCapabilities(t *testing.T) {
	allowed := map[string]bool{}
	for _, b := range Capabilities().Builtins {
		allowed[b.Name] = true
	}
	all := map[string]bool{}
	for _, b := range ast.CapabilitiesForThisVersion().Builtins {
		all[b.Name] = true
		if b.Nondeterministic && allowed[b.Name] {
			t.Errorf("%s is non-deterministic but the sandbox allows it", b.Name)
		}
	}
	for name := range sandboxRefused {
		if !all[name] {
			t.Errorf("the sandbox refuses %s, which this OPA version does not have: renamed?", name)
		}
		if allowed[name] {
			t.Errorf("%s is refused but in the capabilities", name)
		}
	}
	// Print and the builtins OPA rewrites `in`, template strings and test
	// cases into must stay, or ordinary policies stop compiling.
	for _, name := range []string{"print", "internal.print", "internal.member_2", "internal.member_3", "internal.test_case", "net.cidr_contains", "time.parse_rfc3339_ns", "regex.match"} {
		if !allowed[name] && all[name] {
			t.Errorf("%s is refused; it must stay", name)
		}
	}
	want := []string{
		"crypto.x509.parse_and_verify_certificates", "crypto.x509.parse_and_verify_certificates_with_options",
		"http.send", "io.jwt.decode_verify", "io.jwt.encode_sign", "io.jwt.encode_sign_raw",
		"json.match_schema", "json.verify_schema", "net.lookup_ip_addr", "opa.runtime",
		"providers.aws.sign_req", "rand.intn", "time.now_ns", "uuid.rfc4122",
	}
	if diff := cmp.Diff(want, RefusedBuiltins()); diff != "" {
		t.Errorf("refused builtins (-want +got):\n%s", diff)
	}
	if c := Capabilities(); slices.ContainsFunc(c.Builtins, func(b *ast.Builtin) bool { return b.Name == "http.send" }) {
		t.Error("Capabilities has http.send")
	}
}

// The embedded policies and lib compile inside the sandbox.
func TestSandboxDefaultSetCompiles(t *testing.T) {
	if _, err := NewDefault(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
}

// SandboxError gives other compilers' errors (OPA's tester) the same words.
func TestSandboxErrorRewritesCompilerErrors(t *testing.T) {
	loc := &ast.Location{File: "p/p_test.rego", Row: 7}
	errs := ast.Errors{
		ast.NewError(ast.TypeErr, loc, "undefined function time.now_ns"),
		ast.NewError(ast.TypeErr, loc, "undefined function data.p.missing"),
	}
	err := SandboxError(errs)
	want := "2 errors occurred:\n" +
		"p/p_test.rego:7: rego_type_error: builtin time.now_ns is not allowed by mpiguard's policy sandbox: it reads the clock: the same TrainJob would be decided differently over time\n" +
		"p/p_test.rego:7: rego_type_error: undefined function data.p.missing"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if errs[0].Message != "undefined function time.now_ns" {
		t.Errorf("SandboxError changed its argument: %q", errs[0].Message)
	}
	if other := errors.New("x"); !errors.Is(SandboxError(other), other) {
		t.Error("SandboxError changed an error that is not ast.Errors")
	}
}
