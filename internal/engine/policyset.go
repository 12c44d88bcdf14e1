package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mpiguard/mpiguard/policies"
)

// PolicySet is the source of a set of policies: Rego modules (tests excluded),
// their parameter schemas and their parameters. The engine compiles it into
// something it evaluates.
type PolicySet struct {
	// Modules maps a file name (shown in compile errors) to Rego source.
	Modules map[string]string
	// Schemas maps a policy name to its parameter schema (SchemaFile, YAML).
	// A policy without one takes no parameters.
	Schemas    map[string]string
	Parameters Parameters
}

// PolicyPackagePrefix is where policies live: package mpiguard.policies.<name>,
// with <name> the policy name with "-" written as "_" (aggregate_quota).
const PolicyPackagePrefix = "data.mpiguard.policies."

// DefaultPolicySet returns the policies and parameters embedded in the binary.
func DefaultPolicySet() (PolicySet, error) {
	return LoadPolicySet(policies.FS, policies.ParametersFile)
}

// LoadPolicySet reads every non-test .rego file under fsys, each policy
// folder's parameter schema (<policy>/parameters.schema.yaml) and, when
// parametersFile is not empty, the parameters document. Test files
// (*_test.rego) and samples are left to the tester.
func LoadPolicySet(fsys fs.FS, parametersFile string) (PolicySet, error) {
	set := PolicySet{Modules: map[string]string{}, Schemas: map[string]string{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		isSchema := path.Base(p) == SchemaFile && path.Dir(p) != "."
		if !isSchema && (!strings.HasSuffix(p, ".rego") || strings.HasSuffix(p, "_test.rego")) {
			return nil
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if isSchema {
			set.Schemas[path.Base(path.Dir(p))] = string(src)
		} else {
			set.Modules[p] = string(src)
		}
		return nil
	})
	if err != nil {
		return PolicySet{}, fmt.Errorf("reading policies: %w", err)
	}
	if len(set.Modules) == 0 {
		return PolicySet{}, fmt.Errorf("reading policies: no .rego files found")
	}
	if parametersFile != "" {
		data, err := fs.ReadFile(fsys, parametersFile)
		if err != nil {
			return PolicySet{}, fmt.Errorf("reading parameters: %w", err)
		}
		if set.Parameters, err = ParseParameters(data); err != nil {
			return PolicySet{}, err
		}
	}
	return set, nil
}

// Overlay returns s with extra modules added: a module whose package is already
// in s replaces every module of that package (a ConfigMap, or a folder given
// to mpiguard check --policies, can replace an embedded policy), other modules
// extend the set. Parameters are merged. Schemas are s's (a replaced policy
// keeps its schema), in a map of the result's own that the caller may add
// schemas to.
func (s PolicySet) Overlay(modules map[string]string, params Parameters) (PolicySet, error) {
	kept, err := s.Unreplaced(modules)
	if err != nil {
		return PolicySet{}, err
	}
	out := PolicySet{Modules: kept, Schemas: maps.Clone(s.Schemas), Parameters: s.Parameters.Merge(params)}
	if out.Schemas == nil {
		out.Schemas = map[string]string{}
	}
	for name, src := range modules {
		if _, dup := out.Modules[name]; dup {
			name = "configmap/" + name
		}
		out.Modules[name] = src
	}
	return out, nil
}

// Unreplaced returns the modules of s that Overlay(modules) keeps: those of a
// package no module of modules has (the policies an overlay's Rego tests run
// against).
func (s PolicySet) Unreplaced(modules map[string]string) (map[string]string, error) {
	replaced := map[string]bool{}
	for name, src := range modules {
		pkg, err := packageOf(name, src)
		if err != nil {
			return nil, err
		}
		replaced[pkg] = true
	}
	kept := map[string]string{}
	for name, src := range s.Modules {
		pkg, err := packageOf(name, src)
		if err != nil {
			return nil, err
		}
		if !replaced[pkg] {
			kept[name] = src
		}
	}
	return kept, nil
}

// PolicyNames lists the policies the modules of s define (a package
// mpiguard.policies.<name>), sorted; lib is none.
func (s PolicySet) PolicyNames() ([]string, error) {
	seen := map[string]bool{}
	for name, src := range s.Modules {
		pkg, err := packageOf(name, src)
		if err != nil {
			return nil, err
		}
		if p, ok := policyName(pkg); ok {
			seen[p] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// packageOf parses just enough of a module to read its package.
func packageOf(name, src string) (string, error) {
	m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return "", &CompileError{Errors: asErrors(err)}
	}
	return m.Package.Path.String(), nil
}

// Version is a short content hash of the set: the policy set version in the
// decision log and metrics.
func (s PolicySet) Version() string {
	h := sha256.New()
	names := make([]string, 0, len(s.Modules))
	for n := range s.Modules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, s.Modules[n])
	}
	schemas, _ := json.Marshal(s.Schemas) // map keys are sorted by encoding/json
	h.Write(schemas)
	params, _ := json.Marshal(s.Parameters)
	h.Write(params)
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// policyName turns a package path (data.mpiguard.policies.aggregate_quota)
// into the policy name (aggregate-quota); ok is false outside the prefix.
func policyName(pkg string) (string, bool) {
	rest, ok := strings.CutPrefix(pkg, PolicyPackagePrefix)
	if !ok || rest == "" || strings.Contains(rest, ".") {
		return "", false
	}
	return strings.ReplaceAll(rest, "_", "-"), true
}
