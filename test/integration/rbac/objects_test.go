package rbac

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("mpiguard's object counts under exactly the RBAC config/default ships", func() {
	It("reads whether a job's objects exist (get, metadata only) and judges them", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime("rbac-objects-"+ns, "4").Cluster())
		// One of every kind a job creates exists, named as the job's would
		// be: each is read with a GET that the ClusterRole must grant.
		Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-mpi-ssh-auth"},
			Type: corev1.SecretTypeSSHAuth, Data: map[string][]byte{corev1.SSHAuthPrivateKey: []byte("k")}})).To(Succeed())
		Expect(env.Client.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-node-0"},
			Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: fixtures.DefaultImage}}}}}})).To(Succeed())
		// The quota counts every kind (none but the two above exist), and
		// leaves room for what the job still creates: 1 Job, no Secret.
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "objects",
			"count/secrets", "1", "count/jobs.batch", "2", "count/configmaps", "2", "count/services", "1",
			"count/jobsets.jobset.x-k8s.io", "1", "count/persistentvolumeclaims", "0", "count/podgroups.scheduling.x-k8s.io", "0"),
			fixtures.ResourceList("count/secrets", "1", "count/jobs.batch", "1"))
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "kept", rt.Name).NumNodes(1).NumProcPerNode(4).ActiveDeadlineSeconds(600).Obj())).To(Succeed())

		By("denying the next job with the numbers")
		err := env.Client.Create(ctx, fixtures.TrainJob(ns, "next", rt.Name).NumNodes(1).NumProcPerNode(4).ActiveDeadlineSeconds(600).Obj())
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a denial, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`[object-quota] spec.runtimeRef: TrainJob creates 1 Secret counted by count/secrets`))
	})
})
