package publisher

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Every curated runtime's repair and apply series exist, at zero, before
// anything happened to it.
func TestSeriesExistBeforeTheFirstEvent(t *testing.T) {
	count := func() int { return testutil.CollectAndCount(repairsTotal) + testutil.CollectAndCount(appliesTotal) }
	before := count()
	initSeries([]string{"init-test-a", "init-test-b"})
	// 2 runtimes x (2 repair causes + 2 apply results).
	if got := count() - before; got != 8 {
		t.Errorf("initSeries made %d series, want 8", got)
	}
	if got := testutil.ToFloat64(repairsTotal.WithLabelValues("init-test-a", "deleted")); got != 0 {
		t.Errorf("repairs of init-test-a (deleted) = %v, want 0", got)
	}
}
