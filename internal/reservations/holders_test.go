package reservations

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The pods, JobSets and entries of these tests.
var (
	pod      = fixtures.JobSetPod
	jobSetOf = fixtures.JobSetOf
	entry    = fixtures.ReservationEntry
)

// heldPods summarises holders as job -> pods per part.
func heldPods(hs []quota.Reservation) map[string][]int32 {
	out := map[string][]int32{}
	for _, h := range hs {
		for _, p := range h.Parts {
			out[h.TrainJob] = append(out[h.TrainJob], p.Pods)
		}
	}
	return out
}

func TestOutstanding(t *testing.T) {
	cases := map[string]struct {
		entries []v1alpha1.ReservationEntry
		pods    []corev1.Pod
		want    map[string][]int32
	}{
		"an entry whose pods do not exist holds them all": {
			entries: []v1alpha1.ReservationEntry{entry("a", 3)},
			want:    map[string][]int32{"team-a/a": {1, 3}},
		},
		"pods that exist are counted by the quota already; finished pods are not": {
			entries: []v1alpha1.ReservationEntry{entry("a", 3)},
			pods:    []corev1.Pod{pod(0, "a", "launcher", corev1.PodRunning), pod(1, "a", "node", corev1.PodPending), pod(2, "a", "node", corev1.PodSucceeded)},
			want:    map[string][]int32{"team-a/a": {2}},
		},
		"an entry whose pods all exist holds nothing": {
			entries: []v1alpha1.ReservationEntry{entry("a", 2)},
			pods:    []corev1.Pod{pod(0, "a", "launcher", corev1.PodRunning), pod(1, "a", "node", corev1.PodRunning), pod(2, "a", "node", corev1.PodRunning)},
			want:    map[string][]int32{},
		},
		"pods that carry the job's JobSet name but not its JobSet's UID do not reduce an entry": {
			entries: []v1alpha1.ReservationEntry{entry("a", 1)},
			pods: func() []corev1.Pod {
				stray := []corev1.Pod{pod(0, "a", "launcher", corev1.PodRunning), pod(1, "a", "node", corev1.PodRunning)}
				for i := range stray {
					stray[i].Labels[jobsetv1alpha2.JobSetUIDKey] = "an-earlier-jobset"
				}
				return stray
			}(),
			want: map[string][]int32{"team-a/a": {1, 1}},
		},
		"another job's pods do not reduce an entry": {
			entries: []v1alpha1.ReservationEntry{entry("a", 1)},
			pods:    []corev1.Pod{pod(0, "other", "launcher", corev1.PodRunning), pod(1, "other", "node", corev1.PodRunning)},
			want:    map[string][]int32{"team-a/a": {1, 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Namespace: "team-a", Entries: tc.entries}}
			jobSets := []metav1.PartialObjectMetadata{jobSetOf("a", ""), jobSetOf("other", "")}
			got := Outstanding(res, ExistingPods(tc.pods, jobSets, time.Now()))
			if diff := cmp.Diff(tc.want, heldPods(got)); diff != "" {
				t.Errorf("holders (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnconfirmed(t *testing.T) {
	held := func(job, uid, op string) v1alpha1.ReservationEntry {
		e := entry(job, 1)
		e.UID, e.Operation = types.UID(uid), op
		return e
	}
	resumeOf := func(job, uid string, generation int64) v1alpha1.ReservationEntry {
		e := held(job, uid, v1alpha1.OperationUpdate)
		e.ResumedFromGeneration = generation
		return e
	}
	job := func(name, uid string) trainer.TrainJob {
		return trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid)}}
	}
	res := &v1alpha1.QuotaReservation{Spec: v1alpha1.QuotaReservationSpec{Entries: []v1alpha1.ReservationEntry{
		held("created", "u1", v1alpha1.OperationCreate),
		held("never-created", "u2", v1alpha1.OperationCreate),
		// The same name came back with another UID: the admitted object never appeared.
		held("recreated", "old", v1alpha1.OperationCreate),
		// A resume that landed: the job runs.
		held("resumed", "u4", v1alpha1.OperationUpdate),
		// A resume that has not landed: the job is still suspended at the generation it updated.
		resumeOf("waiting", "u5", 3),
		// A resume (or a forged review claiming one) of a job that does not exist.
		held("no-such-job", "u6", v1alpha1.OperationUpdate),
		held("forged", "", v1alpha1.OperationCreate),
	}}}
	waiting := job("waiting", "u5")
	waiting.Generation, waiting.Spec.Suspend = 3, ptr.To(true)
	jobs := []trainer.TrainJob{job("created", "u1"), job("recreated", "new"), job("unrelated", "u9"), job("resumed", "u4"), waiting}
	if got := Unconfirmed(res, jobs); got != 5 {
		t.Errorf("Unconfirmed = %d, want 5 (never-created, recreated, waiting, no-such-job, forged)", got)
	}
	if got := Unconfirmed(&v1alpha1.QuotaReservation{}, jobs); got != 0 {
		t.Errorf("Unconfirmed of an empty reservation = %d", got)
	}
}

// A pod is charged as the apiserver's pod quota evaluator charges it: not
// once finished, nor once terminating past its deletion grace.
func TestCharged(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	deleting := func(ago time.Duration, grace int64) corev1.Pod {
		p := pod(0, "a", "node", corev1.PodRunning)
		p.DeletionTimestamp = &metav1.Time{Time: now.Add(-ago)}
		p.DeletionGracePeriodSeconds = ptr.To(grace)
		return p
	}
	cases := map[string]struct {
		pod  corev1.Pod
		want bool
	}{
		"running":                           {pod(0, "a", "node", corev1.PodRunning), true},
		"pending":                           {pod(0, "a", "node", corev1.PodPending), true},
		"succeeded":                         {pod(0, "a", "node", corev1.PodSucceeded), false},
		"failed":                            {pod(0, "a", "node", corev1.PodFailed), false},
		"terminating within its grace":      {deleting(10*time.Second, 30), true},
		"terminating past its grace (lost)": {deleting(time.Minute, 30), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Charged(&tc.pod, now); got != tc.want {
				t.Errorf("Charged = %v, want %v", got, tc.want)
			}
		})
	}
}
