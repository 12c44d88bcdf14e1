package pipeline

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/mpiguard/mpiguard/internal/capacity"
)

// The webhooks read Nodes (cluster-scoped) for the node-capacity policy:
// an informer keeps their shapes (capacity.Index); read only.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// Nodes is the cluster's nodes by shape: NodeIndex's when set (the
// webhooks: an informer keeps it, so a decision reads a few shapes, never
// the node list), else the Nodes Reader lists (the command line), nil when
// there are none (a user's command line that may not list them reads through
// audit.SkipForbidden, which lists none).
func (c ClientCluster) Nodes(ctx context.Context) (*capacity.Summary, error) {
	if c.NodeIndex != nil {
		return c.NodeIndex.Summary(), nil
	}
	var list corev1.NodeList
	if err := c.Reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	return capacity.Summarize(list.Items), nil
}

// WatchNodes keeps an index of the cluster's nodes by shape from informers'
// Node informer (the manager's cache): every add, update and delete is
// recorded, and a decision reads the summary made after the last change of
// shape. synced says whether the informer has listed every node: before
// that, the index holds some nodes or none, and a decision would be judged
// against part of the cluster (the readiness check waits for it).
func WatchNodes(ctx context.Context, informers crcache.Informers) (index *capacity.Index, synced func() bool, err error) {
	inf, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return nil, nil, fmt.Errorf("watching Nodes: %w", err)
	}
	index = capacity.NewIndex()
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				index.Set(n)
			}
		},
		UpdateFunc: func(_, obj any) {
			if n, ok := obj.(*corev1.Node); ok {
				index.Set(n)
			}
		},
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				index.Delete(n.Name)
			}
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watching Nodes: %w", err)
	}
	return index, reg.HasSynced, nil
}

// TrimNode is the cache's transform of Nodes: only what a node's shape
// reads is kept (capacity.Index), so thousands of Nodes with their images
// and conditions do not sit in mpiguard's memory.
func TrimNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{TypeMeta: n.TypeMeta}
	out.Name, out.UID, out.ResourceVersion, out.Labels = n.Name, n.UID, n.ResourceVersion, n.Labels
	out.Spec.Taints, out.Spec.Unschedulable = n.Spec.Taints, n.Spec.Unschedulable
	out.Status.Allocatable = n.Status.Allocatable
	return out, nil
}
