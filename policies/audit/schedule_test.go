package audit

import (
	"testing"
	"time"
)

func TestAuditDelay(t *testing.T) {
	opts := Options{Debounce: 2 * time.Second, MaxDelay: 30 * time.Second}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
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
