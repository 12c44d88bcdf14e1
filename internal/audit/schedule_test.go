package audit

import (
	"testing"
	"time"
)

func TestAuditDelay(t *testing.T) {
	opts := Options{Debounce: 2 * time.Second, MaxDelay: 30 * time.Second}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := t0.Add
	cases := []struct {
		name string
		p    *pending
		now  time.Time
		want time.Duration
	}{
		{"nothing changed (interval, policy change): at once", nil, at(0), 0},
		{"one change, debounce not over", &pending{at(0), at(0)}, at(500 * time.Millisecond), 1500 * time.Millisecond},
		{"one change, debounce over", &pending{at(0), at(0)}, at(2 * time.Second), 0},
		{"a burst still going: wait for it to rest", &pending{at(0), at(10 * time.Second)}, at(10*time.Second + 100*time.Millisecond), 1900 * time.Millisecond},
		{"a burst at rest", &pending{at(0), at(10 * time.Second)}, at(13 * time.Second), 0},
		{"changes that never rest: MaxDelay after the first", &pending{at(0), at(29*time.Second + 500*time.Millisecond)}, at(29*time.Second + 600*time.Millisecond), 400 * time.Millisecond},
		{"changes that never rest, overdue", &pending{at(0), at(40 * time.Second)}, at(40 * time.Second), 0},
	}
	for _, c := range cases {
		if got := auditDelay(c.now, c.p, opts); got != c.want {
			t.Errorf("%s: auditDelay = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestYieldFor(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name          string
		lastAdmission time.Time
		want          time.Duration
	}{
		{"no admission ever (the audit command)", time.Time{}, 0},
		{"admission idle for a while", now.Add(-5 * time.Second), 0},
		{"admission busy", now.Add(-100 * time.Millisecond), 8 * time.Millisecond},
	}
	for _, c := range cases {
		if got := yieldFor(now, c.lastAdmission, 2*time.Millisecond); got != c.want {
			t.Errorf("%s: yieldFor = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestChangedThenTake: the controller's own bookkeeping around auditDelay. A
// change waits for the debounce; a change during it moves the wait; once
// taken, the changes are gone and the next one starts a new wait.
func TestChangedThenTake(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	now := t0
	c := &Controller{opts: Options{Debounce: 2 * time.Second, MaxDelay: 30 * time.Second}, now: func() time.Time { return now }, changes: map[string]*pending{}}
	step := func(d time.Duration) { now = now.Add(d) }

	if got := c.take("team-a"); got != 0 {
		t.Fatalf("nothing changed: take = %v, want 0", got)
	}
	c.changed("team-a")
	step(time.Second)
	if got := c.take("team-a"); got != time.Second {
		t.Fatalf("1 s after a change: take = %v, want 1s", got)
	}
	c.changed("team-a") // the burst goes on
	step(1500 * time.Millisecond)
	if got := c.take("team-a"); got != 500*time.Millisecond {
		t.Fatalf("1.5 s after the last change: take = %v, want 500ms", got)
	}
	step(500 * time.Millisecond)
	if got := c.take("team-a"); got != 0 {
		t.Fatalf("at rest: take = %v, want 0", got)
	}
	if _, ok := c.changes["team-a"]; ok {
		t.Fatal("changes still noted after they were taken")
	}
	c.changed("team-a")
	if got := c.take("team-a"); got != 2*time.Second {
		t.Fatalf("a new change after the audit: take = %v, want the whole debounce", got)
	}
}
