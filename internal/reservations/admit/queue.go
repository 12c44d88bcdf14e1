package admit

// Queue is the Admitter's batching (batch.go) for a caller that makes its
// own decisions: items of a namespace are handed to run in turn, in batches
// of those waiting when the last batch ended. The load benchmarks' floor
// webhook decides through it, so its writes are batched exactly as the
// Admitter's are.
type Queue[T any] struct{ b *batches[T] }

// NewQueue returns a Queue that decides each batch of a namespace with run.
func NewQueue[T any](run func(namespace string, batch []T)) *Queue[T] {
	return &Queue[T]{b: newBatches(run)}
}

// Add queues item for its namespace's next batch.
func (q *Queue[T]) Add(namespace string, item T) { q.b.add(namespace, item) }
