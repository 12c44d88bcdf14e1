package capacity

import (
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Summary is the cluster's nodes grouped by shape. It is read-only once
// made; a nil Summary means no nodes are known (the check is skipped).
type Summary struct {
	// Nodes is how many nodes there are; Shapes their distinct shapes.
	Nodes  int
	Shapes []*Shape
}

// Shape is a set of nodes alike in everything scheduling reads of a node
// but its name and hostname label.
type Shape struct {
	Allocatable   corev1.ResourceList
	Labels        map[string]string // without corev1.LabelHostname
	Taints        []corev1.Taint    // without the node condition taints (conditionTaints)
	Unschedulable bool
	// Members are the nodes of this shape, by name, with their hostname
	// label ("" when unset): a pod selecting nodes by hostname or name is
	// matched against each.
	Members []Member
}

// Member is one node of a shape.
type Member struct{ Name, Hostname string }

type member struct{ key, hostname string }

// conditionTaints are set and removed by the node lifecycle controller as a
// node's conditions change (not ready, under pressure): a passing state,
// not what the node can ever hold.
var conditionTaints = map[string]bool{
	corev1.TaintNodeNotReady:           true,
	corev1.TaintNodeUnreachable:        true,
	corev1.TaintNodeMemoryPressure:     true,
	corev1.TaintNodeDiskPressure:       true,
	corev1.TaintNodePIDPressure:        true,
	corev1.TaintNodeNetworkUnavailable: true,
	corev1.TaintNodeOutOfService:       true,
}

// Summarize groups nodes by shape.
func Summarize(nodes []corev1.Node) *Summary {
	ix := NewIndex()
	for i := range nodes {
		ix.Set(&nodes[i])
	}
	return ix.Summary()
}

// Index keeps the shapes of a changing set of nodes (an informer's): Set
// and Delete are called on every event, Summary is what a decision reads,
// made again only after a node's shape changed, a node came or went. It is
// safe for concurrent use.
type Index struct {
	mu      sync.Mutex
	byNode  map[string]member // node name -> its shape key and hostname
	byShape map[string]*Shape
	summary *Summary // nil when it must be made again
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{byNode: map[string]member{}, byShape: map[string]*Shape{}}
}

// Set adds node or records its new shape.
func (ix *Index) Set(node *corev1.Node) {
	shape, key := shapeOf(node)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	now := member{key: key, hostname: shape.Members[0].Hostname}
	old, had := ix.byNode[node.Name]
	if had && old == now {
		return // a status update: nothing scheduling reads changed
	}
	if had {
		ix.remove(node.Name, old.key)
	}
	ix.byNode[node.Name] = now
	if s, ok := ix.byShape[key]; ok {
		s.Members = append(s.Members, shape.Members[0])
	} else {
		ix.byShape[key] = shape
	}
	ix.summary = nil
}

// Delete forgets node name.
func (ix *Index) Delete(name string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if m, ok := ix.byNode[name]; ok {
		ix.remove(name, m.key)
		ix.summary = nil
	}
}

func (ix *Index) remove(name, key string) {
	delete(ix.byNode, name)
	s := ix.byShape[key]
	for i, m := range s.Members {
		if m.Name == name {
			s.Members = append(s.Members[:i:i], s.Members[i+1:]...)
			break
		}
	}
	if len(s.Members) == 0 {
		delete(ix.byShape, key)
	}
}

// Summary is the nodes known now, nil when there are none. The Summary
// returned is never changed afterwards: Set and Delete make new ones.
func (ix *Index) Summary() *Summary {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if len(ix.byNode) == 0 {
		return nil
	}
	if ix.summary != nil {
		return ix.summary
	}
	keys := make([]string, 0, len(ix.byShape))
	for k := range ix.byShape {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := &Summary{Nodes: len(ix.byNode), Shapes: make([]*Shape, 0, len(keys))}
	for _, k := range keys {
		s := *ix.byShape[k]
		s.Members = append([]Member(nil), s.Members...)
		sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Name < s.Members[j].Name })
		out.Shapes = append(out.Shapes, &s)
	}
	ix.summary = out
	return out
}

// shapeOf is node's shape (with node its one member) and its key.
func shapeOf(node *corev1.Node) (*Shape, string) {
	s := &Shape{
		Allocatable:   node.Status.Allocatable.DeepCopy(),
		Labels:        make(map[string]string, len(node.Labels)),
		Unschedulable: node.Spec.Unschedulable,
		Members:       []Member{{Name: node.Name, Hostname: node.Labels[corev1.LabelHostname]}},
	}
	var b strings.Builder
	names := make([]string, 0, len(s.Allocatable))
	for name := range s.Allocatable {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := s.Allocatable[corev1.ResourceName(name)]
		b.WriteString("a\x00" + name + "\x00" + q.String() + "\x00")
	}
	labels := make([]string, 0, len(node.Labels))
	for k, v := range node.Labels {
		if k == corev1.LabelHostname {
			continue
		}
		s.Labels[k] = v
		labels = append(labels, k+"\x00"+v)
	}
	sort.Strings(labels)
	for _, l := range labels {
		b.WriteString("l\x00" + l + "\x00")
	}
	for _, t := range node.Spec.Taints {
		if conditionTaints[t.Key] {
			continue
		}
		s.Taints = append(s.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	sort.Slice(s.Taints, func(i, j int) bool { return taintKey(s.Taints[i]) < taintKey(s.Taints[j]) })
	for _, t := range s.Taints {
		b.WriteString("t\x00" + taintKey(t) + "\x00")
	}
	if s.Unschedulable {
		b.WriteString("u")
	}
	return s, b.String()
}

func taintKey(t corev1.Taint) string { return t.Key + "\x00" + t.Value + "\x00" + string(t.Effect) }
