package retire

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
)

// pod is a pod of the JobSet of TrainJob job (jobSetOf), as the JobSet
// controller labels it.
func pod(i int, job, replicatedJob string, phase corev1.PodPhase) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", job, replicatedJob, i),
			Labels: map[string]string{
				jobsetv1alpha2.JobSetNameKey: job, jobsetv1alpha2.JobSetUIDKey: "jobset-of-" + job,
				jobsetv1alpha2.ReplicatedJobNameKey: replicatedJob,
			}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

// jobSetOf is the metadata of the JobSet the Trainer built for TrainJob job
// (UID uid; the test entries have none).
func jobSetOf(job string, uid types.UID) metav1.PartialObjectMetadata {
	return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Namespace: "team-a", Name: job, UID: types.UID("jobset-of-" + job),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "trainer.kubeflow.org/v1alpha1", Kind: "TrainJob", Name: job, UID: uid, Controller: ptr.To(true)}},
	}}
}

// entry holds 1 launcher pod and `workers` Worker pods.
func entry(job string, workers int32) v1alpha1.ReservationEntry {
	admitted := metav1.NewTime(time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC))
	return v1alpha1.ReservationEntry{TrainJob: job, Operation: v1alpha1.OperationCreate, AdmittedAt: admitted, HoldUntil: admitted, Parts: []v1alpha1.ReservedPart{
		{ReplicatedJob: "launcher", Pods: 1},
		{ReplicatedJob: "node", Pods: workers},
	}}
}
