package capacity

import (
	"maps"
	"math/big"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// Input is input.capacity: absent when no nodes are known (the webhook's
// cache has none, `mpiguard check` was given no Node documents), so the
// node-capacity policy judges nothing.
type Input struct {
	// Nodes is how many nodes the cluster has; Shapes how many distinct shapes.
	Nodes  int `json:"nodes"`
	Shapes int `json:"shapes"`
	// ReplicatedJobs are the job's replicated jobs in the order of the
	// rendered JobSet, each judged against every node.
	ReplicatedJobs []ReplicatedJob `json:"replicatedJobs"`
	// Gang is the Launcher and Workers together; absent without Workers.
	Gang *Gang `json:"gang,omitempty"`
}

// ReplicatedJob says where the pods of one replicated job may go.
type ReplicatedJob struct {
	Name string      `json:"name"`
	Role render.Role `json:"role"`
	Pods int32       `json:"pods"`
	// Requests is what one pod asks of a node, as kubectl prints each amount
	// (the requests the scheduler fits, overhead included; a pod also takes
	// one of the node's "pods").
	Requests map[string]string `json:"requests"`
	// EligibleNodes is how many nodes the pods may be placed on: their node
	// selector and required node affinity match (with the RuntimeClass's
	// scheduling), they tolerate the node's taints, and it is schedulable.
	EligibleNodes int `json:"eligibleNodes"`
	// Excluded counts the other nodes by the first reason they fail.
	Excluded Excluded `json:"excluded"`
	// FittingNodes is how many eligible nodes have the allocatable for one pod.
	FittingNodes int `json:"fittingNodes"`
	// Short lists each resource one pod asks more of than every eligible
	// node has allocatable, in name order.
	Short []Shortfall `json:"short"`
}

// Excluded counts nodes a replicated job's pods may not go to, by reason.
type Excluded struct {
	Selector      int `json:"selector"`      // node selector or required node affinity does not match
	Taints        int `json:"taints"`        // a NoSchedule or NoExecute taint not tolerated
	Unschedulable int `json:"unschedulable"` // spec.unschedulable (cordoned)
}

// Shortfall is one resource a pod asks more of than any eligible node has.
type Shortfall struct {
	Resource string `json:"resource"`
	Asks     string `json:"asks"`
	Largest  string `json:"largest"` // the most an eligible node has allocatable
}

// Gang is whether the Launcher and the Workers can all run at once on the
// nodes' allocatable (the scheduler places pods one by one, but an MPI job
// runs only when all of them do).
type Gang struct {
	Workers  int32 `json:"workers"`  // Worker pods
	Launcher bool  `json:"launcher"` // the job has a Launcher pod
	// Capacity is the most Workers the nodes hold at once beside the
	// Launcher (0 when the Launcher fits no node).
	Capacity int64 `json:"capacity"`
	// Shapes are the node shapes that can hold a Worker or the Launcher,
	// for the policy to add nodes the cluster autoscaler may create.
	Shapes []GangShape `json:"shapes"`
}

// GangShape is what the nodes of one shape hold of the gang.
type GangShape struct {
	// Nodes is how many nodes of the shape the Workers may go to.
	Nodes  int               `json:"nodes"`
	Labels map[string]string `json:"labels"`
	// Shape is the node shape described, Labels its labels; a Summary's
	// shapes never change, so what is derived from one may be kept.
	Shape *Shape `json:"-"`
	// WorkersPerNode is how many Workers one such node holds.
	WorkersPerNode int64 `json:"workersPerNode"`
	// LauncherCost is how many Workers fewer the nodes hold when the
	// Launcher runs on a node of this shape: absent when it cannot, 0 when
	// it can go to one the Workers may not use.
	LauncherCost *int64 `json:"launcherCost,omitempty"`
}

// Of is input.capacity of a job rendered as view on the nodes nodes
// summarizes (nil: none known, and Of is nil), its pods' RuntimeClasses
// among runtimeClasses.
func Of(view *render.JobView, nodes *Summary, runtimeClasses []nodev1.RuntimeClass) *Input {
	if nodes == nil || view == nil {
		return nil
	}
	if slices.Contains(nodes.Shapes, nil) { // only a hand-built Summary has one
		nodes = &Summary{Nodes: nodes.Nodes, Shapes: slices.DeleteFunc(slices.Clone(nodes.Shapes), func(s *Shape) bool { return s == nil })}
	}
	out := &Input{Nodes: nodes.Nodes, Shapes: len(nodes.Shapes), ReplicatedJobs: make([]ReplicatedJob, 0, len(view.ReplicatedJobs))}
	placements := make(map[string][]placement, len(view.ReplicatedJobs))
	for i := range view.ReplicatedJobs {
		rj := &view.ReplicatedJobs[i]
		facts, places := replicatedJobOf(rj, nodes, runtimeClasses)
		out.ReplicatedJobs = append(out.ReplicatedJobs, facts)
		placements[rj.Name] = places
	}
	// The Workers and the Launcher are among the replicated jobs of every
	// view the renderer makes; a view built otherwise gets no gang facts.
	if wp, ok := placements[nameOf(view.Workers)]; ok && view.Workers != nil {
		var launcher *render.ReplicatedJobView
		if view.Launcher != nil && view.Launcher.Pods > 0 {
			launcher = view.Launcher
		}
		if lp, ok := placements[nameOf(launcher)]; launcher == nil || ok {
			out.Gang = gangOf(view.Workers, wp, launcher, lp, nodes)
		}
	}
	return out
}

func nameOf(rj *render.ReplicatedJobView) string {
	if rj == nil {
		return ""
	}
	return rj.Name
}

// placement is where one replicated job's pods may go among one shape's
// nodes: all of them or none (byMember nil: what a shape's nodes share
// decides), or, for a pod that picks nodes by name or hostname, each member.
type placement struct {
	count    int
	byMember []bool
}

// eligible says whether the pods may go to member i of the shape.
func (p placement) eligible(i int) bool {
	if p.byMember == nil {
		return p.count > 0
	}
	return p.byMember[i]
}

func replicatedJobOf(rj *render.ReplicatedJobView, nodes *Summary, runtimeClasses []nodev1.RuntimeClass) (ReplicatedJob, []placement) {
	pod := schedulingPod(rj, runtimeClasses)
	requests := podRequests(rj)
	out := ReplicatedJob{Name: rj.Name, Role: rj.Role, Pods: rj.Pods, Requests: map[string]string{}, Short: []Shortfall{}}
	for name, q := range rj.PerPod.Requests {
		if q.Sign() > 0 {
			out.Requests[string(name)] = q.String()
		}
	}
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	perNode := namesNodes(pod)
	largest := corev1.ResourceList{}
	places := make([]placement, len(nodes.Shapes))
	var node corev1.Node // the node the filters read, set for each shape or member
	for si, shape := range nodes.Shapes {
		var p placement
		count := func(reason exclusionReason, n int) {
			switch reason {
			case excludedSelector:
				out.Excluded.Selector += n
			case excludedTaints:
				out.Excluded.Taints += n
			case excludedUnschedulable:
				out.Excluded.Unschedulable += n
			default:
				p.count += n
			}
		}
		if perNode {
			p.byMember = make([]bool, len(shape.Members))
			for mi, m := range shape.Members {
				reason := exclusion(pod, affinity, nodeOf(&node, shape, m))
				p.byMember[mi] = reason == eligible
				count(reason, 1)
			}
		} else {
			// What a shape's nodes share decides for all of them.
			count(exclusion(pod, affinity, nodeOf(&node, shape, Member{})), len(shape.Members))
		}
		places[si] = p
		if p.count == 0 {
			continue
		}
		out.EligibleNodes += p.count
		if perNodeCount(requests, shape.Allocatable) > 0 {
			out.FittingNodes += p.count
		}
		for name := range requests {
			have := shape.Allocatable[name]
			if l, ok := largest[name]; !ok || have.Cmp(l) > 0 {
				largest[name] = have // read only: no copy
			}
		}
	}
	if out.EligibleNodes > 0 && out.FittingNodes == 0 {
		names := slices.Sorted(maps.Keys(requests))
		for _, name := range names {
			asks, have := requests[name], largest[name]
			if asks.Cmp(have) > 0 {
				out.Short = append(out.Short, Shortfall{Resource: string(name), Asks: asks.String(), Largest: have.String()})
			}
		}
	}
	return out, places
}

// gangOf is how many Workers the nodes hold beside the Launcher.
func gangOf(workers *render.ReplicatedJobView, wp []placement, launcher *render.ReplicatedJobView, lp []placement, nodes *Summary) *Gang {
	out := &Gang{Workers: workers.Pods, Launcher: launcher != nil, Shapes: []GangShape{}}
	w := podRequests(workers)
	var l corev1.ResourceList
	if launcher != nil {
		l = podRequests(launcher)
	}
	var total int64
	var bestCost *int64
	for si, shape := range nodes.Shapes {
		gs := GangShape{Nodes: wp[si].count, Labels: shape.Labels, Shape: shape}
		if gs.Nodes > 0 {
			gs.WorkersPerNode = perNodeCount(w, shape.Allocatable)
		}
		if launcher != nil && lp[si].count > 0 && perNodeCount(l, shape.Allocatable) > 0 {
			cost := gs.WorkersPerNode - perNodeCountBeside(w, shape.Allocatable, l)
			for mi := range shape.Members {
				if lp[si].eligible(mi) && !wp[si].eligible(mi) {
					cost = 0 // a node the Workers may not use
					break
				}
				if lp[si].byMember == nil && wp[si].byMember == nil {
					break // every member alike
				}
			}
			gs.LauncherCost = &cost
			if bestCost == nil || cost < *bestCost {
				bestCost = &cost
			}
		}
		if gs.Nodes == 0 && gs.LauncherCost == nil || gs.WorkersPerNode == 0 && gs.LauncherCost == nil {
			continue
		}
		total += int64(gs.Nodes) * gs.WorkersPerNode
		out.Shapes = append(out.Shapes, gs)
	}
	switch {
	case launcher == nil:
		out.Capacity = total
	case bestCost != nil:
		out.Capacity = total - *bestCost
	}
	return out
}

type exclusionReason int

const (
	eligible exclusionReason = iota
	excludedSelector
	excludedTaints
	excludedUnschedulable
)

// exclusion is the first of the scheduler's filters on node alone that
// pod fails (NodeAffinity, TaintToleration, NodeUnschedulable), or eligible.
func exclusion(pod *corev1.Pod, affinity nodeaffinity.RequiredNodeAffinity, node *corev1.Node) exclusionReason {
	if ok, err := affinity.Match(node); err != nil || !ok {
		return excludedSelector
	}
	noScheduleOrExecute := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	if _, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, noScheduleOrExecute, false); untolerated {
		return excludedTaints
	}
	cordon := &corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	if node.Spec.Unschedulable && !corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, cordon, false) {
		return excludedUnschedulable
	}
	return eligible
}

// schedulingPod is the pod of rj as the scheduler filters it: its node
// selector, affinity and tolerations as admission leaves them (the
// DefaultTolerationSeconds plugin's tolerations added, its RuntimeClass's
// scheduling merged as the RuntimeClass plugin merges it).
func schedulingPod(rj *render.ReplicatedJobView, runtimeClasses []nodev1.RuntimeClass) *corev1.Pod {
	spec := &rj.PodTemplate.Spec
	pod := &corev1.Pod{Spec: corev1.PodSpec{NodeSelector: spec.NodeSelector, Affinity: spec.Affinity}}
	var runtimeClassTolerations []corev1.Toleration
	if name := spec.RuntimeClassName; name != nil {
		i := slices.IndexFunc(runtimeClasses, func(rc nodev1.RuntimeClass) bool { return rc.Name == *name })
		if i >= 0 && runtimeClasses[i].Scheduling != nil {
			s := runtimeClasses[i].Scheduling
			selector := maps.Clone(spec.NodeSelector)
			if selector == nil {
				selector = map[string]string{}
			}
			maps.Copy(selector, s.NodeSelector)
			pod.Spec.NodeSelector = selector
			runtimeClassTolerations = s.Tolerations
		}
	}
	pod.Spec.Tolerations = render.AdmittedTolerations(spec, runtimeClassTolerations)
	return pod
}

// namesNodes says whether pod picks nodes by name or hostname: then each
// node of a shape is matched on its own.
func namesNodes(pod *corev1.Pod) bool {
	if _, ok := pod.Spec.NodeSelector[corev1.LabelHostname]; ok {
		return true
	}
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if len(t.MatchFields) > 0 {
			return true
		}
		for _, e := range t.MatchExpressions {
			if e.Key == corev1.LabelHostname {
				return true
			}
		}
	}
	return false
}

// nodeOf sets n to member m of shape (Member{}: any of them, when what
// they share decides) as far as the filters read a Node, and returns it.
func nodeOf(n *corev1.Node, shape *Shape, m Member) *corev1.Node {
	labels := shape.Labels
	if m.Hostname != "" {
		labels = maps.Clone(shape.Labels)
		labels[corev1.LabelHostname] = m.Hostname
	}
	n.Name, n.Labels, n.Spec.Taints, n.Spec.Unschedulable = m.Name, labels, shape.Taints, shape.Unschedulable
	return n
}

// podRequests is what one pod of rj asks of a node: its requests (overhead
// included, as the scheduler counts them) and one of the node's pods.
func podRequests(rj *render.ReplicatedJobView) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for name, q := range rj.PerPod.Requests {
		if q.Sign() > 0 {
			out[name] = q
		}
	}
	return out
}

// perNodeCount is how many pods asking requests a node of allocatable
// holds: the least, over the resources asked, of allocatable / request (a
// resource the node does not have holds none).
func perNodeCount(requests, allocatable corev1.ResourceList) int64 {
	return perNodeCountBeside(requests, allocatable, nil)
}

// perNodeCountBeside is perNodeCount on what a node of allocatable has
// left once a pod asking taken is on it (nil: nothing taken).
func perNodeCountBeside(requests, allocatable, taken corev1.ResourceList) int64 {
	best := int64(-1)
	for name, asks := range requests {
		have, ok := allocatable[name]
		if t, isTaken := taken[name]; ok && isTaken {
			have = have.DeepCopy()
			have.Sub(t)
		}
		if !ok || have.Sign() <= 0 {
			return 0
		}
		n, ok := milliQuo(have, asks)
		if !ok {
			continue // more than any count of pods
		}
		if best < 0 || n < best {
			best = n
		}
	}
	return max(best, 0)
}

// milliQuo is have / asks in whole pods, exact: in int64 milli units when
// both are small enough (every real amount), else in big integers; ok is
// false when the count does not fit an int64.
func milliQuo(have, asks resource.Quantity) (int64, bool) {
	const small = 1 << 50 // base units whose milli amount fits an int64
	if h, a := have.Value(), asks.Value(); h < small && a < small && h > -small && a > -small {
		return have.MilliValue() / asks.MilliValue(), true
	}
	n := new(big.Int).Quo(quota.Milli(have), quota.Milli(asks))
	return n.Int64(), n.IsInt64()
}
