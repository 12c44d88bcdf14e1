package devcluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kwok is KWOK's controller binary's name, in its folder and as a shim.
const kwok = "kwok"

// KWOKNodeAnnotation marks the nodes KWOK plays the kubelet for.
const KWOKNodeAnnotation = "kwok.x-k8s.io/node"

// KWOKAssets returns the folder with KWOK's controller (kwok) and the KWOK
// stages it runs (stages/), built from the Go module proxy by
// test/kwok/build.sh (once per version, into the cache; `make kwok` runs the
// same script, the Makefile's KWOK_VERSION pins it).
func KWOKAssets() (string, error) { return kwokAssets() }

var kwokAssets = sync.OnceValues(func() (string, error) {
	return runBuildScript("KWOK", "test/kwok/build.sh")
})

// startKWOK runs KWOK's controller for the nodes annotated
// KWOKNodeAnnotation=fake, with KWOK's own stages (test/kwok/build.sh copies
// them from the module): a node becomes Ready; a pod bound to it gets an IP,
// becomes Running and Ready, and a Job's pod then completes (Succeeded),
// each after a delay its annotations may set
// (pod-complete.stage.kwok.x-k8s.io/delay, ...); a deleted pod goes.
func (e *Env) startKWOK(ctx context.Context) error {
	assets, err := KWOKAssets()
	if err != nil {
		return err
	}
	stages, err := filepath.Glob(filepath.Join(assets, "stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no KWOK stages in %s: rebuild with test/kwok/build.sh (%v)", filepath.Join(assets, "stages"), err)
	}
	// mpiguard's own stages (test/kwok/stages: a pod that fails), which no
	// pod takes unless annotated for them.
	own, err := filepath.Glob(filepath.Join(RepoRoot(), "test", "kwok", "stages", "*.yaml"))
	if err != nil {
		return err
	}
	stages = append(stages, own...)
	kubeconfig, err := e.componentKubeconfig(kwok, "system:kwok-controller")
	if err != nil {
		return err
	}
	port, err := e.componentPort()
	if err != nil {
		return fmt.Errorf("finding a port for KWOK: %w", err)
	}
	_, err = e.startComponent(ctx, kwok, kwok, assets, loopbackURL("http", port),
		"--kubeconfig="+kubeconfig,
		"--config="+strings.Join(stages, ","),
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KWOKNodeAnnotation+"=fake",
		"--server-address="+net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		"--v=INFO",
	)
	return err
}

// createKWOKNodes creates n fake nodes kwok-node-0..n-1 with gpus
// nvidia.com/gpu each (and room enough of CPU, memory and pods for any
// demo), for KWOK to play the kubelet of.
func (e *Env) createKWOKNodes(ctx context.Context, n, gpus int) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		"nvidia.com/gpu":      *resource.NewQuantity(int64(gpus), resource.DecimalSI),
	}
	for i := range n {
		name := "kwok-node-" + strconv.Itoa(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{KWOKNodeAnnotation: "fake"},
				Labels: map[string]string{
					"type": "kwok", corev1.LabelHostname: name,
					corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				},
			},
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if err := e.Client.Create(ctx, node); err != nil {
			return fmt.Errorf("creating KWOK node %s: %w", name, err)
		}
		if err := e.untaintWhenReady(ctx, node); err != nil {
			return err
		}
	}
	return nil
}

// untaintWhenReady waits until KWOK reports node Ready and removes the
// node.kubernetes.io/not-ready taint the apiserver put on it at creation
// (its TaintNodesByCondition admission), which kept the scheduler away: the
// node lifecycle controller's part, which does not run here (it would judge
// heartbeats that no kubelet sends).
func (e *Env) untaintWhenReady(ctx context.Context, node *corev1.Node) error {
	key := client.ObjectKeyFromObject(node)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, key, node); err != nil {
			return false, err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("KWOK never made node %s Ready: %w", node.Name, err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Client.Get(ctx, key, node); err != nil {
			return err
		}
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady })
		return e.Client.Update(ctx, node)
	})
}
