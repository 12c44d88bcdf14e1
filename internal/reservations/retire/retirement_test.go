package retire

import (
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

func TestRetirementFor(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	within := metav1.NewTime(now.Add(10 * time.Second))
	// Past the grace by more than another replica's clock may be ahead.
	past := metav1.NewTime(now.Add(-clockSkew - time.Second))
	// Past the grace on this clock, but not by the skew allowed: kept.
	skewed := metav1.NewTime(now.Add(-clockSkew + time.Second))
	created := func(hold metav1.Time) *v1alpha1.ReservationEntry {
		return &v1alpha1.ReservationEntry{TrainJob: "j", UID: "u1", Operation: v1alpha1.OperationCreate, HoldUntil: hold,
			Parts: []v1alpha1.ReservedPart{{ReplicatedJob: "launcher", Pods: 1}, {ReplicatedJob: "node", Pods: 2}}}
	}
	resumed := func(hold metav1.Time) *v1alpha1.ReservationEntry {
		e := created(hold)
		e.Operation, e.ResumedFromGeneration = v1alpha1.OperationUpdate, 3
		return e
	}
	job := func(mod func(*trainer.TrainJob)) *trainer.TrainJob {
		j := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "u1", Generation: 4}}
		if mod != nil {
			mod(j)
		}
		return j
	}
	suspended := func(gen int64) func(*trainer.TrainJob) {
		return func(j *trainer.TrainJob) { j.Spec.Suspend, j.Generation = ptr.To(true), gen }
	}
	allPods := map[string]int32{"launcher": 1, "node": 2}
	cases := []struct {
		name  string
		entry *v1alpha1.ReservationEntry
		job   *trainer.TrainJob
		pods  map[string]int32
		live  bool
		want  retirement
	}{
		{"job not seen yet, within grace: recheck at its end", created(within), nil, nil, false, retirement{recheck: within.Add(clockSkew)}},
		{"just past the grace on this clock, within the skew: keep", created(skewed), nil, nil, true, retirement{recheck: skewed.Add(clockSkew)}},
		{"job not in the cache after the grace: confirm live", created(past), nil, nil, false, retirement{confirm: true}},
		{"job absent live after the grace: never created", created(past), nil, nil, true, retirement{release: ReasonNeverCreated}},
		{"a job of the same name but another UID: never created", created(past), job(func(j *trainer.TrainJob) { j.UID = types.UID("u2") }), nil, true, retirement{release: ReasonNeverCreated}},
		{"running, no pods yet: keep", created(past), job(nil), nil, false, retirement{}},
		{"running, some pods: keep", created(past), job(nil), map[string]int32{"launcher": 1, "node": 1}, false, retirement{}},
		{"every pod exists: the quota counts them", created(within), job(nil), allPods, false, retirement{release: ReasonPodsCreated}},
		{"suspended after its create", created(within), job(suspended(5)), nil, false, retirement{release: ReasonSuspended}},
		{"finished", created(within), job(func(j *trainer.TrainJob) {
			j.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue}}
		}), nil, false, retirement{release: ReasonFinished}},
		{"being deleted", created(within), job(func(j *trainer.TrainJob) { j.DeletionTimestamp = &past }), nil, false, retirement{release: ReasonDeleted}},
		{"resume admitted, cache still shows the suspended job: keep until the grace", resumed(within), job(suspended(3)), nil, false, retirement{recheck: within.Add(clockSkew)}},
		{"resume not landed after the grace: confirm live", resumed(past), job(suspended(3)), nil, false, retirement{confirm: true}},
		{"resume never applied", resumed(past), job(suspended(3)), nil, true, retirement{release: ReasonResumeNotApplied}},
		{"Kueue's first write of its resume (placement, still suspended): keep until the grace", resumed(within), job(suspended(4)), nil, false, retirement{recheck: within.Add(clockSkew)}},
		{"resumed, then suspended again: kept until the grace", resumed(within), job(suspended(5)), nil, false, retirement{recheck: within.Add(clockSkew)}},
		{"resumed, then suspended again, past the grace", resumed(past), job(suspended(5)), nil, true, retirement{release: ReasonSuspended}},
		{"resumed and running", resumed(past), job(nil), nil, false, retirement{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := retirementFor(tc.entry, tc.job, tc.pods, now, tc.live, false); got != tc.want {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRetirementForADeletedJob: an entry whose job was seen deleted goes at once,
// within its grace, from the cache alone; one without a UID cannot be matched
// to a deletion and waits for its grace.
func TestRetirementForADeletedJob(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	within := metav1.NewTime(now.Add(10 * time.Second))
	entry := func(uid types.UID) *v1alpha1.ReservationEntry {
		return &v1alpha1.ReservationEntry{TrainJob: "j", UID: uid, Operation: v1alpha1.OperationCreate, HoldUntil: within,
			Parts: []v1alpha1.ReservedPart{{ReplicatedJob: "node", Pods: 2}}}
	}
	reused := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "j", UID: "u2"}}
	cases := []struct {
		name  string
		entry *v1alpha1.ReservationEntry
		job   *trainer.TrainJob
		want  retirement
	}{
		{"deleted before its pods existed", entry("u1"), nil, retirement{release: ReasonDeleted}},
		{"deleted, its name already reused by another job", entry("u1"), reused, retirement{release: ReasonDeleted}},
		{"an entry without a UID", entry(""), nil, retirement{recheck: within.Add(clockSkew)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := retirementFor(tc.entry, tc.job, nil, now, false, true); got != tc.want {
				t.Errorf("decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}
