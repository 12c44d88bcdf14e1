// Command mpiguard-dev is what `make run` starts: a local control plane (real
// kube-apiserver + etcd with the Trainer and JobSet CRDs), mpiguard serving on
// it exactly as `mpiguard serve` wires it, and a short demo of the suite at work.
// It then stays up so you can `kubectl apply` your own objects, and stops
// everything, control plane included, on Ctrl-C.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mpiguard/mpiguard/internal/devcluster"
)

func main() {
	kubeconfig := flag.String("kubeconfig-out", filepath.Join(devcluster.RepoRoot(), "bin", "kubeconfig"), "Where to write the admin kubeconfig of the local control plane.")
	noDemo := flag.Bool("no-demo", false, "Skip the demo; only serve.")
	verbose := flag.Bool("v", false, "Show mpiguard's own logs.")
	flag.Parse()

	logOpts := zap.Options{Development: true}
	if !*verbose {
		logOpts.DestWriter = discard{}
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&logOpts)))

	// `make run | tee run.log` and Ctrl-C: tee dies of it too, and the next
	// line printed meets a closed pipe. Ignored, SIGPIPE cannot kill us before
	// the cleanup; the write fails with EPIPE instead and is dropped.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *kubeconfig, !*noDemo)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mpiguard-dev:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfigPath string, demo bool) (err error) {
	say("starting a local cluster: kube-apiserver, etcd, kube-controller-manager, kube-scheduler, KWOK with fake GPU nodes,")
	say("the JobSet and Trainer controllers, and mpiguard (a first run builds the control plane and KWOK from source: several minutes)")
	began := time.Now()
	env, err := devcluster.Start(ctx, devcluster.Options{Name: "dev", Workloads: &devcluster.Workloads{}})
	if err != nil {
		return err
	}
	defer func() {
		say("stopping mpiguard, the controllers, KWOK, kube-apiserver and etcd")
		// A failed run keeps the components' logs, and says where.
		if err := env.Stop(err != nil); err != nil {
			fmt.Fprintln(os.Stderr, "mpiguard-dev: stopping:", err)
		}
	}()
	if err := writeKubeconfig(env, kubeconfigPath); err != nil {
		return err
	}
	say("cluster up in %s; mpiguard serving its webhooks over TLS to it", time.Since(began).Round(100*time.Millisecond))
	say("kubeconfig: %s", kubeconfigPath)
	say("try:        kubectl --kubeconfig %s get clustertrainingruntimes", kubeconfigPath)
	if demo {
		demoBegan := time.Now()
		if err := runDemo(ctx, env); err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C during the demo: stop as after it
			}
			return fmt.Errorf("demo: %w", err)
		}
		say("demo done in %s (%s since the start)", time.Since(demoBegan).Round(100*time.Millisecond), time.Since(began).Round(100*time.Millisecond))
	}
	say("ready; press Ctrl-C to stop")
	<-ctx.Done()
	return nil
}

func writeKubeconfig(env *devcluster.Env, path string) error {
	user, err := env.Testenv.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, kc, 0o600)
}

func say(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
