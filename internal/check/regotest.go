package check

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// RunRegoTests runs the Rego unit tests (test_* rules in *_test.rego) of a
// policies tree with OPA's tester, like `opa test`, but from an fs.FS so the
// embedded policies can be tested. YAML and JSON beside the Rego (samples,
// parameters) are not data for the tests. A policy folder without any test is
// reported as a failed result, where `opa test` passes it silently.
func RunRegoTests(ctx context.Context, fsys fs.FS) ([]*tester.Result, error) {
	return RunRegoTestsOver(ctx, fsys, nil)
}

// RunRegoTestsOver runs the Rego unit tests of fsys as RunRegoTests does,
// with the modules of base (file name to source: the embedded policies a
// folder given to --policies is laid over, that its tests may import, such
// as data.mpiguard.lib) compiled beside them. base is not tested.
func RunRegoTestsOver(ctx context.Context, fsys fs.FS, base map[string]string) ([]*tester.Result, error) {
	modules := map[string]*ast.Module{}
	for name, src := range base {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, err
		}
		modules[baseModule+name] = m
	}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return err
		}
		modules[p] = m
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The engine's sandbox: a builtin it refuses fails here too, at load,
	// rather than in tests that pass and a set the engine then rejects.
	// Print statements stay enabled, as in `opa test`.
	compiler := ast.NewCompiler().WithCapabilities(engine.Capabilities()).WithEnablePrintStatements(true).WithDefaultRegoVersion(ast.RegoV1)
	ch, err := tester.NewRunner().SetCompiler(compiler).SetModules(modules).SetDefaultRegoVersion(ast.RegoV1).RaiseBuiltinErrors(true).RunTests(ctx, nil)
	if err != nil {
		return nil, engine.SandboxError(err)
	}
	var results []*tester.Result
	tested := map[string]bool{}
	for r := range ch {
		results = append(results, r)
		tested[dirOf(r.Location)] = true
	}
	for file := range modules {
		dir := strings.SplitN(file, "/", 2)[0]
		if strings.HasPrefix(file, baseModule) || strings.HasSuffix(file, "_test.rego") || !strings.Contains(file, "/") || tested[dir] {
			continue
		}
		tested[dir] = true
		results = append(results, &tester.Result{
			Package: dir,
			Name:    "(no tests)",
			Fail:    true,
			Error:   fmt.Errorf("policy folder %s has Rego but no test_* rule in a *_test.rego file", dir),
		})
	}
	return results, nil
}

// baseModule prefixes the names of RunRegoTestsOver's base modules, apart
// from the tree's own.
const baseModule = "embedded:"

func dirOf(loc *ast.Location) string {
	if loc == nil {
		return ""
	}
	return strings.SplitN(loc.File, "/", 2)[0]
}
