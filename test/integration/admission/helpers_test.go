package admission

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// createRuntime creates a ClusterTrainingRuntime for one spec and deletes it afterwards.
func createRuntime(ctx context.Context, b *fixtures.RuntimeBuilder) *trainer.ClusterTrainingRuntime {
	GinkgoHelper()
	rt := b.Cluster()
	Expect(env.Client.Create(ctx, rt)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rt))).To(Succeed()) })
	return rt
}

// createQuota creates a ResourceQuota and sets its status as the quota controller
// would (envtest runs no controller-manager): hard as in spec, used as given.
func createQuota(ctx context.Context, q *corev1.ResourceQuota, used corev1.ResourceList) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, q)).To(Succeed())
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: used}
	Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
	// The webhook reads quotas from its cache: wait until it shows the status.
	Eventually(func(g Gomega) {
		var cached corev1.ResourceQuota
		g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(q), &cached)).To(Succeed())
		g.Expect(cached.Status.Used).To(HaveLen(len(used)))
	}).Should(Succeed())
}

// denial creates job and returns the apiserver's denial message; it fails the
// spec when the job is admitted.
func denial(ctx context.Context, job *trainer.TrainJob) string {
	GinkgoHelper()
	err := env.Client.Create(ctx, job)
	Expect(err).To(HaveOccurred(), "TrainJob %s was admitted, want a denial", job.Name)
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a webhook denial, got %v", err)
	return err.Error()
}

// admitted creates job, expects it admitted and returns the stored object.
func admitted(ctx context.Context, job *trainer.TrainJob) *trainer.TrainJob {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, job)).To(Succeed())
	stored := &trainer.TrainJob{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), stored)).To(Succeed())
	return stored
}

// mpiguardPatch returns mpiguard's own runtime patch entry of a stored TrainJob.
func mpiguardPatch(job *trainer.TrainJob) *trainer.RuntimePatch {
	for i := range job.Spec.RuntimePatches {
		if job.Spec.RuntimePatches[i].Manager == "mpiguard.io/admission" {
			return &job.Spec.RuntimePatches[i]
		}
	}
	return nil
}

// podTemplatePatch returns the patch of one replicated job's pod template.
func podTemplatePatch(p *trainer.RuntimePatch, replicatedJob string) *trainer.PodTemplatePatch {
	if p == nil || p.TrainingRuntimeSpec == nil || p.TrainingRuntimeSpec.Template == nil || p.TrainingRuntimeSpec.Template.Spec == nil {
		return nil
	}
	for _, rj := range p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
		if rj.Name == replicatedJob && rj.Template != nil && rj.Template.Spec != nil {
			return rj.Template.Spec.Template
		}
	}
	return nil
}

// gpuWorkers is an MPI runtime whose Workers (node job) each have gpus GPUs and 4 CPUs.
func gpuWorkers(name, gpus string) *fixtures.RuntimeBuilder {
	return fixtures.MPIRuntime(name).
		Resources("node", fixtures.ResourceList("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", gpus), fixtures.ResourceList("nvidia.com/gpu", gpus)).
		Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "1Gi"), nil)
}
