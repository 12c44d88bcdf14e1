package lifecycle

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

const gpu = "requests.nvidia.com/gpu"

// gpuRuntime is an MPI ClusterTrainingRuntime whose Workers each have gpus GPUs.
func gpuRuntime(ctx context.Context, name, gpus string) *trainer.ClusterTrainingRuntime {
	GinkgoHelper()
	return env.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime(name, gpus).Cluster())
}

// gpuJob is a TrainJob of `workers` Workers with `slots` Slots per worker
// (one per GPU, as slot-to-GPU consistency wants).
func gpuJob(ns, name, runtime string, workers, slots int32) *fixtures.TrainJobBuilder {
	return fixtures.TrainJob(ns, name, runtime).NumNodes(workers).NumProcPerNode(slots)
}

// gpuQuota creates a quota of n GPUs, none used, its status set as the
// quota controller would.
func gpuQuota(ctx context.Context, ns, n string) {
	GinkgoHelper()
	env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "gpus", gpu, n), fixtures.ResourceList(gpu, "0"))
}

// admitted creates job and expects it admitted.
func admitted(ctx context.Context, job *trainer.TrainJob) *trainer.TrainJob {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, job)).To(Succeed(), "TrainJob %s/%s", job.Namespace, job.Name)
	return job
}

// denial creates job and returns the webhook's denial.
func denial(ctx context.Context, job *trainer.TrainJob) string {
	GinkgoHelper()
	err := env.Client.Create(ctx, job)
	Expect(err).To(HaveOccurred(), "TrainJob %s/%s was admitted, want a denial", job.Namespace, job.Name)
	Expect(apierrors.IsForbidden(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err)).To(BeTrue(), "want a webhook refusal, got %v", err)
	return err.Error()
}

// resume unsuspends job as Kueue does (a merge patch of spec.suspend).
func resume(ctx context.Context, job *trainer.TrainJob) error {
	return env.Client.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))
}

// snapshot waits for the Trainer's runtime snapshot of job and returns it.
func snapshot(ctx context.Context, job *trainer.TrainJob) *corev1.ConfigMap {
	GinkgoHelper()
	cm := &corev1.ConfigMap{}
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: pipeline.SnapshotName(job)}, cm)
	}, timeout, interval).Should(Succeed(), "the Trainer never took the runtime snapshot of %s", job.Name)
	return cm
}

// entryOf returns the reservation job's entry records (by name and UID), as
// mpiguard reads it, nil when none.
func entryOf(ctx context.Context, job *trainer.TrainJob) *quota.Reservation {
	GinkgoHelper()
	res := env.Reservation(ctx, job.Namespace)
	if res == nil {
		return nil
	}
	for i, r := range store.Reservations(res) {
		if e := &res.Spec.Entries[i]; e.TrainJob == job.Name && e.UID == job.UID {
			return &r
		}
	}
	return nil
}

// gpusOf is the GPUs a reservation's pods ask for, all parts together.
func gpusOf(r *quota.Reservation) int64 {
	var n int64
	for _, p := range r.Parts {
		per := p.PerPod[gpu]
		n += per.Value() * int64(p.Pods)
	}
	return n
}

// jobSetGPUs is the GPUs the pods of the Trainer's JobSet for job ask for.
func jobSetGPUs(ctx context.Context, job *trainer.TrainJob) int64 {
	GinkgoHelper()
	js := &jobset.JobSet{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), js)).To(Succeed())
	var n int64
	for _, rj := range js.Spec.ReplicatedJobs {
		pods := int64(rj.Replicas)
		if p := rj.Template.Spec.Parallelism; p != nil {
			pods *= int64(*p)
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			q := c.Resources.Requests["nvidia.com/gpu"]
			n += pods * q.Value()
		}
	}
	return n
}
