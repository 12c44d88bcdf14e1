package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The check-only build (go build -tags checkonly ./cmd/mpiguard, make build's
// bin/mpiguard-check) has the check subcommand of this package, the same
// code the full binary runs, and none of what only serving needs: linking
// mpiguard's manager, webhooks or controllers back in would bring back their
// pages and package initialisation (zap, gRPC and OpenTelemetry among them),
// which is what the build exists to leave out. controller-runtime's manager
// itself stays: the Trainer's runtime framework, which renders, imports it.
func TestCheckOnlyBuildLinksNoServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-tags", "checkonly", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps -tags checkonly: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	for _, p := range []string{
		"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme",
		"github.com/mpiguard/mpiguard/internal/check",
	} {
		if !deps[p] {
			t.Errorf("the check-only build does not link %s (is go list's output what this test expects?)", p)
		}
	}
	for _, p := range []string{
		"github.com/mpiguard/mpiguard/cmd/mpiguard/app",
		"github.com/mpiguard/mpiguard/internal/follow",
		"github.com/mpiguard/mpiguard/internal/kueuecheck",
		"github.com/mpiguard/mpiguard/webhooks/trainjob",
		"github.com/mpiguard/mpiguard/runtimes/publisher",
		"github.com/mpiguard/mpiguard/runtimes/smoketest",
		"sigs.k8s.io/controller-runtime/pkg/log/zap",
		"google.golang.org/grpc",
	} {
		if deps[p] {
			t.Errorf("the check-only build links %s: only what check uses belongs in it (the subcommands that serve carry //go:build !checkonly)", p)
		}
	}
}
