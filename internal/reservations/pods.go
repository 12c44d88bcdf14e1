package reservations

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// RBAC (ClusterRole): which TrainJob a pod belongs to is told by its
// JobSet's owner; only the JobSets' metadata is cached.
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch

// Existing counts, per TrainJob (its name and UID) and replicated job, the
// pods of the job that the apiserver's quota charges.
type Existing map[string]map[string]int32

// Of is what exists of the TrainJob name with uid, by replicated job.
func (e Existing) Of(name string, uid types.UID) map[string]int32 {
	return e[jobKey(name, uid)]
}

func jobKey(name string, uid types.UID) string { return name + "/" + string(uid) }

// JobSetMeta is the metadata of a JobSet: all that is read of it to tell
// whose its pods are.
func JobSetMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet"))
	return m
}

// ReadExisting reads the pods of namespace ns that the quota charges at now
// and the JobSets they belong to, with reader (the cache).
func ReadExisting(ctx context.Context, reader client.Reader, ns string, now time.Time) (Existing, error) {
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the pods of %q: %w", ns, err)
	}
	jobSets := &metav1.PartialObjectMetadataList{}
	jobSets.SetGroupVersionKind(jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSetList"))
	if err := reader.List(ctx, jobSets, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing the JobSets of %q: %w", ns, err)
	}
	return ExistingPods(pods.Items, jobSets.Items, now), nil
}

// ExistingPods counts the pods that the apiserver's quota charges at now
// (Charged) by the TrainJob they belong to: a pod belongs to the TrainJob
// that controls the JobSet whose UID the pod's jobset-uid label names (the
// JobSet controller labels every pod of a JobSet so). A pod that only
// carries a JobSet's name — left by an earlier run under the same name, or
// labelled by anyone — belongs to no job and releases no job's entry.
func ExistingPods(pods []corev1.Pod, jobSets []metav1.PartialObjectMetadata, now time.Time) Existing {
	type owner struct{ jobSet, job string }
	owners := make(map[types.UID]owner, len(jobSets))
	for i := range jobSets {
		js := &jobSets[i]
		if ref := metav1.GetControllerOfNoCopy(js); ref != nil && ref.Name == js.Name {
			owners[js.UID] = owner{jobSet: js.Name, job: jobKey(js.Name, ref.UID)}
		}
	}
	out := Existing{}
	for i := range pods {
		p := &pods[i]
		if !Charged(p, now) {
			continue
		}
		o, ok := owners[types.UID(p.Labels[jobsetv1alpha2.JobSetUIDKey])]
		if !ok || p.Labels[jobsetv1alpha2.JobSetNameKey] != o.jobSet {
			continue
		}
		job := o.job
		if out[job] == nil {
			out[job] = map[string]int32{}
		}
		out[job][p.Labels[jobsetv1alpha2.ReplicatedJobNameKey]]++
	}
	return out
}

// Charged says whether the apiserver's quota charges pod at now: not when it
// has finished, nor once it is terminating past its deletion grace (a pod
// stuck terminating on a lost node). The rule of the pod quota evaluator
// (k8s.io/kubernetes pkg/quota/v1/evaluator/core, QuotaV1Pod), which is not
// importable outside k8s.io/kubernetes.
func Charged(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		grace := time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		return !now.After(pod.DeletionTimestamp.Add(grace))
	}
	return true
}
