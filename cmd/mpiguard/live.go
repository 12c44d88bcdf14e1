package main

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
)

// liveFlags are the flags of the subcommands that read a live cluster (audit,
// check --from-cluster): the cluster kubectl would talk to.
type liveFlags struct {
	kubeconfig  string
	kubeContext string
	mpiguardNS  string
}

func (l *liveFlags) register(f *pflag.FlagSet) {
	f.StringVar(&l.kubeconfig, "kubeconfig", "", "kubeconfig file (default: as kubectl finds it)")
	f.StringVar(&l.kubeContext, "context", "", "kubeconfig context to use")
	f.StringVar(&l.mpiguardNS, "mpiguard-namespace", "mpiguard-system", "namespace mpiguard runs in (where it keeps its quota reservations)")
}

// connect returns a client of the cluster (KUBECONFIG, ~/.kube/config or the
// in-cluster account, as kubectl) and the context's namespace.
func (l liveFlags) connect() (client.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = l.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: l.kubeContext})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the kubeconfig's namespace: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, ns, nil
}

// auditor runs objects of the cluster c reads through ev's pipeline: every
// read is a plain read of the apiserver, and reservations are read where
// mpiguard keeps them.
func (l liveFlags) auditor(c client.Client, ev *check.Evaluator) *audit.Auditor {
	return &audit.Auditor{
		Pipeline:     pipeline.New(ev.Renderer, ev.Engine),
		Cluster:      pipeline.ClientCluster{Reader: c, Live: c},
		Reservations: store.NewStore(c, c, nil, l.mpiguardNS),
	}
}
