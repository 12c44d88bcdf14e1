package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// memoryJob is a job of workers × perWorker memory requests and a launcher
// requesting launcher memory; each pod declares what it requests.
func memoryJob(workers int32, perWorker, launcher string) *input.Source {
	req := mpiRequest("team-a", workers)
	req.TrainJob.Spec.ActiveDeadlineSeconds = 3600
	mem := func(q string) render.Charge {
		return render.Charge{Pods: 1, Requests: corev1.ResourceList{"memory": resource.MustParse(q)}}
	}
	req.View.ReplicatedJobs[0].PerPod = mem(launcher)
	req.View.ReplicatedJobs[1].PerPod = mem(perWorker)
	return req
}

func memoryQuotaOf(hard string) corev1.ResourceQuota {
	return corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.memory": resource.MustParse(hard)}},
	}
}

// quotaDenials decides req with the default policies and returns the
// aggregate-quota messages.
func quotaDenials(t *testing.T, e *Engine, req *input.Source) []string {
	t.Helper()
	d := decide(t, e, req)
	var out []string
	for _, v := range d.Denials() {
		if v.Policy == "aggregate-quota" {
			out = append(out, v.Message)
		}
	}
	if len(out) == 0 && !d.Allowed {
		t.Errorf("denied by other policies: %+v", d.Violations)
	}
	return out
}

// Quantities past int64 (thousands of Workers × terabytes, petabytes per
// Worker) are compared and reported exactly: int64 milli amounts wrapped
// around and let such jobs pass, or printed nonsense.
func TestQuotaPastInt64(t *testing.T) {
	e, err := NewDefault(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		req   *input.Source
		quota string
		want  []string
	}{
		{
			name: "5000 workers x 4Ti against 1Pi", req: memoryJob(5000, "4Ti", "1Gi"), quota: "1Pi",
			want: []string{`TrainJob needs 20480001Gi memory (launcher 1Gi + 5000 workers x 4Ti) but ResourceQuota "team-a" has 1Pi of 1Pi free; reduce workers to 255 or memory per worker to 225179766620, or ask an admin to raise the quota`},
		},
		{
			name: "2 workers x 8Pi against 1Pi", req: memoryJob(2, "8Pi", "0"), quota: "1Pi",
			want: []string{`TrainJob needs 16Pi memory (launcher 0 + 2 workers x 8Pi) but ResourceQuota "team-a" has 1Pi of 1Pi free; reduce memory per worker to 512Ti, or ask an admin to raise the quota`},
		},
		{
			name: "2 workers x 8Pi and a launcher against 16Pi", req: memoryJob(2, "8Pi", "1Gi"), quota: "16Pi",
			want: []string{`TrainJob needs 16777217Gi memory (launcher 1Gi + 2 workers x 8Pi) but ResourceQuota "team-a" has 16Pi of 16Pi free; reduce workers to 1 or memory per worker to 8589934080Mi, or ask an admin to raise the quota`},
		},
		{
			name: "5000 workers x 1Ei against 4Ei", req: memoryJob(5000, "1Ei", "0"), quota: "4Ei",
			want: []string{`TrainJob needs 5000Ei memory (launcher 0 + 5000 workers x 1Ei) but ResourceQuota "team-a" has 4Ei of 4Ei free; reduce workers to 4 or memory per worker to 922337203685477, or ask an admin to raise the quota`},
		},
		{name: "exact fit: 5000 workers x 4Ti in 20000Ti", req: memoryJob(5000, "4Ti", "0"), quota: "20000Ti"},
		{name: "exact fit: 2 workers x 8Pi and a launcher in 16Pi+1Gi", req: memoryJob(2, "8Pi", "1Gi"), quota: "16777217Gi"},
		{
			name: "one byte over at 20000Ti", req: memoryJob(5000, "4Ti", "1"), quota: "20000Ti",
			want: []string{`TrainJob needs 21990232555520001 memory (launcher 1 + 5000 workers x 4Ti) but ResourceQuota "team-a" has 20000Ti of 20000Ti free; reduce workers to 4999 or memory per worker to 4398046511103, or ask an admin to raise the quota`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Quotas = []corev1.ResourceQuota{memoryQuotaOf(tc.quota)}
			if diff := cmp.Diff(tc.want, quotaDenials(t, e, tc.req)); diff != "" {
				t.Errorf("aggregate-quota denials (-want +got):\n%s", diff)
			}
		})
	}
}

// A denial that counts what admitted jobs hold names them, largest first,
// with what each holds.
func TestQuotaDenialNamesHolders(t *testing.T) {
	e, err := NewDefault(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "team-a"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("16")}},
		Status:     corev1.ResourceQuotaStatus{Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4")}},
	}
	quotas := []corev1.ResourceQuota{q}
	holder := func(name string, workers int32) quota.Reservation {
		return quota.Reservation{TrainJob: name, Parts: quota.PartsOf(gpuView(workers))}
	}
	req := mpiRequest("team-a", 2)
	req.TrainJob.Spec.ActiveDeadlineSeconds = 3600
	req.View = gpuView(2)
	req.Quotas = quotas

	req.Reservations = []quota.Reservation{holder("team-a/job-1", 1), holder("team-a/job-2", 2)}
	want := []string{`TrainJob needs 8 nvidia.com/gpu (launcher 0 + 2 workers x 4) but ResourceQuota "team-a" has 0 of 16 free (4 used by running pods, 12 held by TrainJobs admitted whose pods do not exist yet: team-a/job-2 8, team-a/job-1 4); ask an admin to raise the quota`}
	if diff := cmp.Diff(want, quotaDenials(t, e, req)); diff != "" {
		t.Errorf("denial (-want +got):\n%s", diff)
	}

	q.Status.Used = nil
	req.Quotas = []corev1.ResourceQuota{q}
	req.Reservations = []quota.Reservation{holder("team-a/a", 1), holder("team-a/b", 1), holder("team-a/c", 1), holder("team-a/d", 1)}
	want = []string{`TrainJob needs 8 nvidia.com/gpu (launcher 0 + 2 workers x 4) but ResourceQuota "team-a" has 0 of 16 free (0 used by running pods, 16 held by TrainJobs admitted whose pods do not exist yet: team-a/a 4, team-a/b 4, team-a/c 4 and 1 more); ask an admin to raise the quota`}
	if diff := cmp.Diff(want, quotaDenials(t, e, req)); diff != "" {
		t.Errorf("denial (-want +got):\n%s", diff)
	}

	// Without holders the message is as it always was.
	req.Reservations = nil
	q.Status.Used = corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("12")}
	req.Quotas = []corev1.ResourceQuota{q}
	want = []string{`TrainJob needs 8 nvidia.com/gpu (launcher 0 + 2 workers x 4) but ResourceQuota "team-a" has 4 of 16 free; reduce workers to 1 or GPUs per worker to 2, or ask an admin to raise the quota`}
	if diff := cmp.Diff(want, quotaDenials(t, e, req)); diff != "" {
		t.Errorf("denial (-want +got):\n%s", diff)
	}
}
