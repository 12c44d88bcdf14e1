package store

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
)

// entry holds 1 launcher pod and `workers` Worker pods.
func entry(job string, workers int32) v1alpha1.ReservationEntry {
	admitted := metav1.NewTime(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	return v1alpha1.ReservationEntry{TrainJob: job, Operation: v1alpha1.OperationCreate, AdmittedAt: admitted, HoldUntil: admitted, Parts: []v1alpha1.ReservedPart{
		{ReplicatedJob: "launcher", Pods: 1},
		{ReplicatedJob: "node", Pods: workers},
	}}
}

// recordOf is e as admission gives it to Put: its parts' pods, charging nothing.
func recordOf(e v1alpha1.ReservationEntry) Record {
	r := Record{Entry: e}
	for _, p := range e.Parts {
		r.Parts = append(r.Parts, quota.Part{ReplicatedJob: p.ReplicatedJob, Pods: p.Pods, Jobs: p.Jobs})
	}
	return r
}
