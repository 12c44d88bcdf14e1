package gang

import (
	"encoding/json"
	"math/big"
	"sort"

	corev1 "k8s.io/api/core/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// Input is input.gang: absent when the job's runtime has no podGroupPolicy.
// Amounts are exact integers of milli units (json.Number) with a display,
// as in input.quotas (quota.Milli, quota.Display).
type Input struct {
	// Scheduler is "volcano" or "coscheduling".
	Scheduler string `json:"scheduler"`
	// MinMember and MinResources are the PodGroup's, as the Trainer builds it.
	MinMember    int32             `json:"minMember"`
	MinResources map[string]Amount `json:"minResources"`
	// ScheduleTimeoutSeconds is the coscheduling PodGroup's; absent when unset.
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
	// Volcano: the scheduler is Volcano.
	Volcano *VolcanoInput `json:"volcano,omitempty"`
}

// Amount is an exact amount of a resource.
type Amount struct {
	Milli   json.Number `json:"milli"`
	Display string      `json:"display"`
}

// VolcanoInput is the queue a Volcano gang goes to.
type VolcanoInput struct {
	// Served is false when the apiserver does not serve Volcano's Queue kind.
	Served bool `json:"served"`
	// Queue is the PodGroup's queue: the scheduling.volcano.sh/queue-name
	// annotation, else Volcano's "default" (Annotated false).
	Queue     string `json:"queue"`
	Annotated bool   `json:"annotated"`
	// Queues are Queue and its ancestors (spec.parent), leaf first, as far as
	// they exist; a Queue that does not exist is one entry with exists false.
	Queues []QueueInput `json:"queues"`
}

// QueueInput is one Volcano Queue of the chain.
type QueueInput struct {
	Name     string   `json:"name"`
	Exists   bool     `json:"exists"`
	State    string   `json:"state"` // status.state: Open, Closed, Closing, Unknown, or "" before Volcano set it
	Parent   string   `json:"parent"`
	Children []string `json:"children"` // queues whose spec.parent is this one: not a leaf when any
	// Capability is one entry per resource the queue's spec.capability
	// names (the others are not capped), in name order.
	Capability []CapacityInput `json:"capability"`
}

// CapacityInput compares the gang with one capped resource of a queue.
type CapacityInput struct {
	Resource string `json:"resource"`
	// Milli is what the gang needs of it: the larger of the PodGroup's
	// minResources (what Volcano enqueues the gang on) and the job's pods'
	// requests as the apiserver admits them (what it allocates each pod on:
	// a GPU set as a limit only is a request of the pod, not of the
	// PodGroup).
	Milli   json.Number `json:"milli"`
	Display string      `json:"display"`
	// Capability is spec.capability; Allocated status.allocated (0 when absent).
	Capability        json.Number `json:"capability"`
	CapabilityDisplay string      `json:"capabilityDisplay"`
	Allocated         json.Number `json:"allocated"`
	AllocatedDisplay  string      `json:"allocatedDisplay"`
}

// InputOf is input.gang for the rendered job view and the cluster's Volcano
// queues (nil when they were not read: the job does not gang with Volcano).
// Nil when the job has no gang.
func InputOf(view *render.JobView, queues *Queues) *Input {
	if view == nil || view.Gang == nil {
		return nil
	}
	g := view.Gang
	out := &Input{
		Scheduler:              g.Scheduler,
		MinMember:              g.MinMember,
		MinResources:           amounts(g.MinResources),
		ScheduleTimeoutSeconds: g.ScheduleTimeoutSeconds,
	}
	if g.Scheduler != render.GangVolcano {
		return out
	}
	v := &VolcanoInput{Queue: g.Queue, Annotated: g.Queue != "", Queues: []QueueInput{}}
	if v.Queue == "" {
		v.Queue = volcanov1beta1.DefaultQueue
	}
	out.Volcano = v
	if queues == nil || !queues.Served {
		return out
	}
	v.Served = true
	need := needs(view)
	v.Queues = queues.chain(v.Queue)
	for i := range v.Queues {
		if q := queues.byName(v.Queues[i].Name); q != nil {
			v.Queues[i].Capability = capacities(q, need)
		}
	}
	return out
}

// needs is what the gang needs per resource: the larger of the PodGroup's
// minResources and the pods' requests (see CapacityInput.Milli).
func needs(view *render.JobView) map[corev1.ResourceName]*big.Int {
	out := map[corev1.ResourceName]*big.Int{}
	add := func(l corev1.ResourceList) {
		for name, q := range l {
			if m := quota.Milli(q); out[name] == nil || m.Cmp(out[name]) > 0 {
				out[name] = m
			}
		}
	}
	add(view.Gang.MinResources)
	add(view.Total.Requests)
	return out
}

// capacities compares need with every resource q's capability names.
func capacities(q *volcanov1beta1.Queue, need map[corev1.ResourceName]*big.Int) []CapacityInput {
	out := make([]CapacityInput, 0, len(q.Spec.Capability))
	for name, capQ := range q.Spec.Capability {
		if name == corev1.ResourcePods {
			// Volcano reads "pods" as a node's task limit, not as a
			// capacity a queue's jobs are compared with.
			continue
		}
		res := string(name)
		n := need[name]
		if n == nil {
			n = new(big.Int)
		}
		capM := quota.Milli(capQ)
		alloc := new(big.Int)
		if a, ok := q.Status.Allocated[name]; ok {
			alloc = quota.Milli(a)
		}
		out = append(out, CapacityInput{
			Resource: res,
			Milli:    json.Number(n.String()), Display: quota.Display(res, n),
			Capability: json.Number(capM.String()), CapabilityDisplay: quota.Display(res, capM),
			Allocated: json.Number(alloc.String()), AllocatedDisplay: quota.Display(res, alloc),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}

func amounts(l corev1.ResourceList) map[string]Amount {
	out := make(map[string]Amount, len(l))
	for name, q := range l {
		m := quota.Milli(q)
		out[string(name)] = Amount{Milli: json.Number(m.String()), Display: quota.Display(string(name), m)}
	}
	return out
}
