package admit

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Items of one namespace are never decided by two batches at once, every item
// is decided exactly once, and items that wait while a batch runs are batched.
func TestBatchesSerialisePerNamespace(t *testing.T) {
	var (
		running   sync.Map // namespace -> *atomic.Int32
		decided   atomic.Int32
		overlaps  atomic.Int32
		maxSeen   atomic.Int32
		decisions sync.WaitGroup
	)
	b := newBatches(func(ns string, batch []int) {
		c, _ := running.LoadOrStore(ns, new(atomic.Int32))
		if c.(*atomic.Int32).Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		if n := int32(len(batch)); n > maxSeen.Load() {
			maxSeen.Store(n)
		}
		decided.Add(int32(len(batch)))
		c.(*atomic.Int32).Add(-1)
		for range batch {
			decisions.Done()
		}
	})
	const perNS = 200
	for _, ns := range []string{"a", "b"} {
		for i := range perNS {
			decisions.Add(1)
			go b.add(ns, i)
		}
	}
	decisions.Wait()
	if decided.Load() != 2*perNS {
		t.Errorf("decided %d items, want %d", decided.Load(), 2*perNS)
	}
	if overlaps.Load() > 0 {
		t.Errorf("%d batches of one namespace ran while another of it ran", overlaps.Load())
	}
	if maxSeen.Load() < 2 || maxSeen.Load() > maxBatch {
		t.Errorf("largest batch %d, want between 2 and %d", maxSeen.Load(), maxBatch)
	}
}
