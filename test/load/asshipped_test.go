package load

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/devcluster"
)

// asShipped runs this process's garbage collector as the shipped Deployment
// (config/manager/deployment.yaml) runs mpiguard's: its GOGC and GOMEMLIMIT.
// The replicas of a benchmark run in this process; the GOGC environment
// variable would not do, the control plane's processes inherit it. It returns
// a function that puts the collector back.
func asShipped(b *testing.B) func() {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(devcluster.RepoRoot(), "config", "manager", "deployment.yaml"))
	must(b, err)
	var d appsv1.Deployment
	must(b, yaml.Unmarshal(raw, &d))
	gogc, limit := 100, int64(-1)
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			switch e.Name {
			case "GOGC":
				gogc, err = strconv.Atoi(e.Value)
				must(b, err)
			case "GOMEMLIMIT": // Go's units (MiB) as Kubernetes quantities (Mi)
				q, err := resource.ParseQuantity(strings.TrimSuffix(e.Value, "B"))
				must(b, err)
				limit = q.Value()
			}
		}
	}
	oldGC, oldLimit := debug.SetGCPercent(gogc), debug.SetMemoryLimit(limit)
	b.Logf("garbage collector as shipped: GOGC=%d, GOMEMLIMIT=%d bytes", gogc, limit)
	return func() {
		debug.SetGCPercent(oldGC)
		debug.SetMemoryLimit(oldLimit)
	}
}
