package quota

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Reservations charged once against a quota (ChargeAgainst) hold what charging
// them anew gives, and a quota read again with another resourceVersion (its
// spec changed) is charged anew, not from what its old spec charged.
func TestChargeAgainstIsChargingAnew(t *testing.T) {
	memoryHeld := func(q *corev1.ResourceQuota, holders []Reservation) string {
		held := ReservedOf(q, holders)["requests.memory"]
		if held == nil {
			return "nothing"
		}
		return held.Total.String()
	}
	q := memoryQuota("64Gi", "")
	q.UID, q.ResourceVersion = "q-uid", "1"
	charged := []Reservation{holder("team-a/a", 2, "8Gi"), holder("team-a/b", 1, "4Gi")}
	ChargeAgainst(charged, []corev1.ResourceQuota{*q})
	fresh := []Reservation{holder("team-a/a", 2, "8Gi"), holder("team-a/b", 1, "4Gi")}
	if got, want := memoryHeld(q, charged), memoryHeld(q, fresh); got != want || got != "20Gi" {
		t.Errorf("charged once: %s held, charged anew: %s; want 20Gi both", got, want)
	}

	// The admin changes the quota to limit pods only: the memory the
	// holders were charged against the old spec is not held any more.
	changed := q.DeepCopy()
	changed.ResourceVersion = "2"
	changed.Spec.Hard = corev1.ResourceList{"pods": resource.MustParse("10")}
	if got := memoryHeld(changed, charged); got != "nothing" {
		t.Errorf("after the quota changed: %s of memory held, want nothing", got)
	}
	if got := ReservedOf(changed, charged)["pods"]; got == nil || got.Total.String() != "3" {
		t.Errorf("after the quota changed: pods held %v, want 3", got)
	}
}
