package framework

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the kubelet and the Trainer write when a job's pods end, for suites
// that run neither.

// FinishPod sets pod's phase Succeeded, as its kubelet would once its
// containers exited 0: the quota no longer charges it.
func (e *Env) FinishPod(ctx context.Context, pod *corev1.Pod) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func() error {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Status.Phase = corev1.PodSucceeded
		return e.Client.Status().Update(ctx, pod)
	}).Should(gomega.Succeed())
}

// CompleteTrainJob sets TrainJob ns/name's Complete condition, as the
// Trainer does once its JobSet completed.
func (e *Env) CompleteTrainJob(ctx context.Context, ns, name string) {
	ginkgo.GinkgoHelper()
	gomega.Eventually(func() error {
		var job trainer.TrainJob
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &job); err != nil {
			return err
		}
		meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{
			Type: trainer.TrainJobComplete, Status: metav1.ConditionTrue, Reason: "JobSetCompleted", Message: "the JobSet completed",
		})
		return e.Client.Status().Update(ctx, &job)
	}).Should(gomega.Succeed())
}
