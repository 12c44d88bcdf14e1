package store

import (
	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// entry is the entry of these tests.
var entry = fixtures.ReservationEntry

// recordOf is e as admission gives it to Put: its parts' pods, charging nothing.
func recordOf(e v1alpha1.ReservationEntry) Record {
	r := Record{Entry: e}
	for _, p := range e.Parts {
		r.Parts = append(r.Parts, quota.Part{ReplicatedJob: p.ReplicatedJob, Pods: p.Pods, Jobs: p.Jobs})
	}
	return r
}
