package store

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/quota"
)

// etcdRequestLimit is etcd's default --max-request-bytes (1.5 MiB): an
// object larger than that cannot be written.
const etcdRequestLimit = 1536 * 1024

// A QuotaReservation full of entries of a typical job (a Launcher and
// Workers with CPU, memory and GPUs, names of the longest allowed length)
// still fits one etcd request: MaxEntries is what keeps it so.
func TestFullReservationFitsEtcd(t *testing.T) {
	usage := func(cpu, mem, gpu string) corev1.ResourceList { // as quota.Canonical keeps it
		out := corev1.ResourceList{
			"pods":         resource.MustParse("1"),
			"requests.cpu": resource.MustParse(cpu), "limits.cpu": resource.MustParse(cpu),
			"requests.memory": resource.MustParse(mem), "limits.memory": resource.MustParse(mem),
		}
		if gpu != "" {
			out["requests.nvidia.com/gpu"] = resource.MustParse(gpu)
		}
		return out
	}
	now := metav1.NewTime(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	r := Record{Entry: v1alpha1.ReservationEntry{
		UID: "0b5c2f3e-8d1a-4e6b-9c7d-2f1e0a9b8c7d", RequestUID: "7f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
		Operation: v1alpha1.OperationUpdate, ResumedFromGeneration: 12, AdmittedAt: now, HoldUntil: now,
	}, Parts: []quota.Part{
		{ReplicatedJob: "launcher", Pods: 1, Jobs: 1, PerPod: usage("1", "1Gi", "")},
		{ReplicatedJob: "node", Pods: 64, Jobs: 1, PerPod: usage("16", "64Gi", "8"), Scope: quota.Scope{PriorityClassName: "training-high"}},
		// What the Trainer and the JobSet controller create besides Jobs.
		{Objects: corev1.ResourceList{"count/configmaps": resource.MustParse("2"), "count/secrets": resource.MustParse("1"),
			"count/services": resource.MustParse("1"), "count/jobsets.jobset.x-k8s.io": resource.MustParse("1")}},
	},
	}
	// MaxEntries entries of such jobs, their shapes stored once.
	records := make([]Record, MaxEntries)
	for i := range records {
		records[i] = r
		records[i].Entry.TrainJob = fmt.Sprintf("%063d", i)
	}
	res := &v1alpha1.QuotaReservation{}
	encode(res, records)
	full, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d entries: %d bytes", MaxEntries, len(full))
	if len(full) > etcdRequestLimit*3/4 {
		t.Errorf("%d entries = %d bytes: more than 3/4 of etcd's %d-byte request limit; lower MaxEntries or shrink entries",
			MaxEntries, len(full), etcdRequestLimit)
	}
}
