package follow

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/diagnosis"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/networkpolicies"
)

// Readers are where Observe reads: Cached for what mpiguard's manager
// caches (TrainJobs' runtimes, JobSet pods), Live for the rest (JobSets,
// Jobs, events, Workloads, PodGroups, NetworkPolicies), read only while it
// matters. `mpiguard explain` passes one live client as both.
type Readers struct {
	Cached, Live client.Reader
}

// Label and queue-name keys of Kueue's that say a job is Kueue's.
const (
	kueueQueueLabel  = "kueue.x-k8s.io/queue-name"
	kueueJobUIDLabel = "kueue.x-k8s.io/job-uid"
)

// PodGroup kinds a gang-scheduled job may have, named after the TrainJob:
// scheduler-plugins' coscheduling and Volcano's.
var podGroupKinds = []schema.GroupVersionKind{
	{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Kind: "PodGroup"},
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"},
}

// IsMPI says whether the job's runtime has mlPolicy.mpi; false, nil when
// the runtime does not exist (the Trainer does not run the job either).
func IsMPI(ctx context.Context, r client.Reader, job *trainer.TrainJob) (bool, error) {
	ref := job.Spec.RuntimeRef
	if ref.APIGroup != nil && *ref.APIGroup != trainer.GroupVersion.Group {
		return false, nil
	}
	var rt client.Object = &trainer.ClusterTrainingRuntime{}
	key := client.ObjectKey{Name: ref.Name}
	if ref.Kind != nil && *ref.Kind == trainer.TrainingRuntimeKind {
		rt, key.Namespace = &trainer.TrainingRuntime{}, job.Namespace
	}
	if err := r.Get(ctx, key, rt); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return engine.Governs(rt), nil
}

// Observe reads what the verdict on job depends on. It reads the JobSet
// live always (the pods it makes), its Jobs and events only while pods are
// missing or it failed, Kueue's Workload only while the job is suspended in
// a queue, its PodGroup only while pods wait, and its NetworkPolicy only when
// the Launcher failed.
func Observe(ctx context.Context, r Readers, job *trainer.TrainJob) (diagnosis.Observation, error) {
	o := diagnosis.Observation{
		Job: job.Name, Namespace: job.Namespace,
		Suspended: jobstate.Suspended(job),
		Queue:     job.Labels[kueueQueueLabel],
		Deadline:  diagnosis.Deadline{Started: admitted(job), Max: time.Duration(job.Spec.ActiveDeadlineSeconds) * time.Second},
	}
	for _, c := range job.Status.Conditions {
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case trainer.TrainJobComplete:
			o.TrainJobComplete = c.DeepCopy()
		case trainer.TrainJobFailed:
			o.TrainJobFailed = c.DeepCopy()
		}
	}
	var pods corev1.PodList
	if err := r.Cached.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: job.Name}); err != nil {
		return o, err
	}
	o.Pods = diagnosis.ByRole(pods.Items)
	if o.Suspended {
		if o.Queue != "" {
			w, err := workload(ctx, r.Live, job)
			if err != nil {
				return o, err
			}
			o.Workload = w
		}
		return o, nil
	}
	js, err := diagnosis.ReadJobSet(ctx, r.Live, job.Namespace, job.Name, false)
	if err != nil {
		return o, err
	}
	o.ExpectedLaunchers, o.ExpectedWorkers = diagnosis.ExpectedPods(js.JobSet)
	o.JobSetFailed, o.FailedJobs = js.Failed, js.FailedJobs
	missing := o.ExpectedWorkers == 0 || int32(len(o.Pods.Workers)) < o.ExpectedWorkers || int32(len(o.Pods.Launcher)) < o.ExpectedLaunchers
	if missing && o.TrainJobComplete == nil && o.TrainJobFailed == nil {
		if err := js.ReadWarnings(ctx, r.Live); err != nil {
			return o, err
		}
		o.Warnings = js.Warnings
	}
	if o.Phase() == diagnosis.PhaseWaiting {
		if o.Gang, err = gang(ctx, r.Live, job); err != nil {
			return o, err
		}
	}
	for _, p := range o.Pods.Launcher {
		if diagnosis.Failed(&p) != nil {
			if o.NetworkPolicyTemplate, err = policyTemplate(ctx, r.Live, job); err != nil {
				return o, err
			}
			break
		}
	}
	return o, nil
}

// Workload reads Kueue's Workload of the job (by Kueue's job-uid label);
// nil when Kueue is not installed or made none yet.
func Workload(ctx context.Context, r client.Reader, job *trainer.TrainJob) (*kueue.Workload, error) {
	var wls kueue.WorkloadList
	err := r.List(ctx, &wls, client.InNamespace(job.Namespace), client.MatchingLabels{kueueJobUIDLabel: string(job.UID)})
	if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil || len(wls.Items) == 0 {
		return nil, err
	}
	return &wls.Items[0], nil
}

// workload is the state of the job's Workload that says why Kueue holds it.
func workload(ctx context.Context, r client.Reader, job *trainer.TrainJob) (*diagnosis.Workload, error) {
	wl, err := Workload(ctx, r, job)
	if wl == nil || err != nil {
		return nil, err
	}
	w := &diagnosis.Workload{Name: wl.Name, Admitted: meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadAdmitted)}
	if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); c != nil && c.Status != metav1.ConditionTrue {
		w.Message = c.Message
	} else if c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadAdmitted); c != nil && c.Status != metav1.ConditionTrue {
		w.Message = c.Message
	}
	return w, nil
}

// gang reads the job's PodGroup, of whichever kind is installed; nil when
// it has none.
func gang(ctx context.Context, r client.Reader, job *trainer.TrainJob) (*diagnosis.Gang, error) {
	for _, gvk := range podGroupKinds {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name}, u)
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		g := &diagnosis.Gang{Kind: gvk.Kind, Name: job.Name}
		g.Phase, _, _ = unstructured.NestedString(u.Object, "status", "phase")
		if n, ok, _ := unstructured.NestedInt64(u.Object, "spec", "minMember"); ok {
			g.MinMember = int32(n)
		}
		if n, ok, _ := unstructured.NestedInt64(u.Object, "status", "scheduled"); ok {
			g.Scheduled = int32(n)
		}
		if g.Phase == "" {
			g.Phase = "Pending"
		}
		return g, nil
	}
	return nil, nil
}

// policyTemplate is the template of the job's mpiguard NetworkPolicy (named
// after the job), "" when it has none.
func policyTemplate(ctx context.Context, r client.Reader, job *trainer.TrainJob) (string, error) {
	var np networkingv1.NetworkPolicy
	err := r.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name}, &np)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return np.Labels[networkpolicies.TemplateLabel], nil
}
