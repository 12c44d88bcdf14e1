package lifecycle

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/framework"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

// With client authentication off (this suite), anyone who reaches mpiguard's
// port can send it a review. A review that claims a resume must not make
// mpiguard hold quota for a job that does not exist, or for another job.
var _ = Describe("a forged resume review", func() {
	It("writes no reservation for a job that does not exist, or exists under another UID", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		rt := gpuRuntime(ctx, "forged-"+ns, "8")
		job := admitted(ctx, gpuJob(ns, "real", rt.Name, 2, 8).Suspend(true).Obj())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())

		ghost := job.DeepCopy()
		ghost.Name, ghost.UID = "ghost", types.UID("00000000-0000-0000-0000-000000000001")
		impostor := job.DeepCopy()
		impostor.UID = types.UID("00000000-0000-0000-0000-000000000002")
		for _, old := range []*trainer.TrainJob{ghost, impostor} {
			resp := forgedResume(old)
			Expect(resp.Allowed).To(BeFalse(), "forged resume of %s (UID %s) allowed", old.Name, old.UID)
			// The impostor may be refused before its reservation: the
			// real job's runtime snapshot is not its own.
			Expect(resp.Result.Message).To(Or(ContainSubstring("does not exist"), ContainSubstring("is another job now"),
				ContainSubstring("a snapshot configmap exists but is owned by another object")))
		}
		Expect(env.ReservedJobs(ctx, ns)).To(BeEmpty(), "a forged review holds quota")

		By("the real job's resume is still admitted in full")
		Expect(resume(ctx, job)).To(Succeed())
		Expect(env.ReservedJobs(ctx, ns)).To(Equal([]string{"real"}))
	})
})

// forgedResume posts, to every replica, a validating review that resumes
// old, and returns the first replica's answer (each must answer alike).
func forgedResume(old *trainer.TrainJob) *admissionv1.AdmissionResponse {
	GinkgoHelper()
	resumed := old.DeepCopy()
	resumed.Spec.Suspend = ptr.To(false)
	req, err := framework.TrainJobReview(admissionv1.Update, resumed, old, "system:serviceaccount:kueue-system:kueue")
	Expect(err).NotTo(HaveOccurred())
	var first *admissionv1.AdmissionResponse
	for i, r := range env.Replicas {
		resp, err := framework.PostReview(r.Addr, trainjob.ValidatePath, req, nil)
		Expect(err).NotTo(HaveOccurred(), "replica %d", i)
		if first == nil {
			first = resp
		}
		Expect(resp.Allowed).To(Equal(first.Allowed), "replica %d answers otherwise", i)
	}
	return first
}
