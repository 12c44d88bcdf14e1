package admit

import (
	"sync"
)

// maxBatch bounds how many waiting quota decisions of one namespace are made
// together, against one read of the namespace's state and one write.
const maxBatch = 512

// batches queues the quota decisions of each namespace and runs them in
// batches, one batch of a namespace at a time in this process: requests that
// arrive while a batch runs form the next one. The kube-apiserver's own
// ResourceQuota admission works the same way (its evaluator's per-namespace
// work queue of waiters), and for the same reason: a burst into one namespace
// costs one read and one write per batch instead of one per request, and one
// replica's requests never conflict with each other.
type batches[T any] struct {
	mu     sync.Mutex
	queues map[string]*queue[T]
	// run decides one batch of a namespace.
	run func(namespace string, batch []T)
}

type queue[T any] struct {
	waiting []T
	running bool
}

func newBatches[T any](run func(namespace string, batch []T)) *batches[T] {
	return &batches[T]{queues: map[string]*queue[T]{}, run: run}
}

// add queues item for its namespace, and starts a runner when none runs.
func (b *batches[T]) add(namespace string, item T) {
	b.mu.Lock()
	q := b.queues[namespace]
	if q == nil {
		q = &queue[T]{}
		b.queues[namespace] = q
	}
	q.waiting = append(q.waiting, item)
	start := !q.running
	q.running = true
	b.mu.Unlock()
	if start {
		go b.drain(namespace, q)
	}
}

// drain runs batches of namespace until its queue is empty, then forgets it.
func (b *batches[T]) drain(namespace string, q *queue[T]) {
	for {
		b.mu.Lock()
		n := min(len(q.waiting), maxBatch)
		if n == 0 {
			q.running = false
			delete(b.queues, namespace)
			b.mu.Unlock()
			return
		}
		batch := q.waiting[:n:n]
		q.waiting = q.waiting[n:]
		b.mu.Unlock()
		b.run(namespace, batch)
	}
}
