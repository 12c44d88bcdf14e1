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
	return env.CreateClusterRuntime(ctx, b.Cluster())
}

// createQuota creates a ResourceQuota with the given status.used (see Env.CreateQuota).
func createQuota(ctx context.Context, q *corev1.ResourceQuota, used corev1.ResourceList) {
	GinkgoHelper()
	env.CreateQuota(ctx, q, used)
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
	return fixtures.GPUWorkersRuntime(name, gpus)
}
