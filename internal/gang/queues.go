package gang

import (
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// RootQueue is the top of Volcano's queue hierarchy: no job may be
// submitted to it (Volcano's admission refuses it).
const RootQueue = "root"

// Queues is what the cluster's Volcano queues are, read only for a job whose
// runtime gangs with Volcano.
type Queues struct {
	// Served is false when the apiserver does not serve Volcano's Queue kind:
	// Volcano is not installed, and no PodGroup can be scheduled.
	Served bool
	// Items are every Queue (cluster-scoped).
	Items []volcanov1beta1.Queue
}

// byName finds a queue; nil when there is none of that name.
func (q *Queues) byName(name string) *volcanov1beta1.Queue {
	for i := range q.Items {
		if q.Items[i].Name == name {
			return &q.Items[i]
		}
	}
	return nil
}

// children are the queues whose spec.parent is name, as Volcano's admission
// finds them to tell a leaf queue from a parent queue.
func (q *Queues) children(name string) []string {
	out := []string{}
	for i := range q.Items {
		if q.Items[i].Spec.Parent == name && q.Items[i].Name != name {
			out = append(out, q.Items[i].Name)
		}
	}
	return out
}

// chain is the queue name and its ancestors that exist, leaf first; a queue
// that does not exist ends it (the first one of a missing queue is
// returned with Exists false). A cycle of parents ends it too.
func (q *Queues) chain(name string) []QueueInput {
	var out []QueueInput
	seen := map[string]bool{}
	for name != "" && !seen[name] {
		seen[name] = true
		queue := q.byName(name)
		if queue == nil {
			if len(out) == 0 {
				out = append(out, QueueInput{Name: name, Children: []string{}, Capability: []CapacityInput{}})
			}
			break
		}
		out = append(out, QueueInput{
			Name:     name,
			Exists:   true,
			State:    string(queue.Status.State),
			Parent:   queue.Spec.Parent,
			Children: q.children(name),
		})
		name = queue.Spec.Parent
	}
	return out
}
