package diagnosis

import (
	"context"

	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// This file is the package's only reader of the cluster; every decision
// above is pure.

// JobSetState is what a job's JobSet, its Jobs and the Warning events on
// them show.
type JobSetState struct {
	// JobSet is nil while it does not exist.
	JobSet *jobsetv1alpha2.JobSet
	// Failed is its Failed condition when True.
	Failed *metav1.Condition
	// FailedJobs are its Jobs whose Failed condition is True: they say why
	// (BackoffLimitExceeded, DeadlineExceeded, a podFailurePolicy rule) where
	// the JobSet only says that one failed.
	FailedJobs []JobFailure
	// Warnings are the Warning events on the JobSet and its Jobs (only with
	// ReadJobSet's withEvents, or after ReadWarnings).
	Warnings []Warning

	namespace string
	owners    map[types.UID]bool // the JobSet's and its Jobs' UIDs
}

// ReadJobSet reads the JobSet the Trainer made of TrainJob name (same name),
// its Jobs and, withEvents, the Warning events on them: the only record of
// pods the apiserver refused to create (Pod Security, SCC, quota, a
// webhook). r reads live: mpiguard caches neither Jobs nor events.
func ReadJobSet(ctx context.Context, r client.Reader, ns, name string, withEvents bool) (JobSetState, error) {
	s := JobSetState{namespace: ns}
	// The objects whose events count, by UID: a Job re-created under the same
	// name (a JobSet restart) does not inherit the old one's events.
	s.owners = map[types.UID]bool{}
	var js jobsetv1alpha2.JobSet
	switch err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &js); {
	case err == nil:
		s.JobSet = &js
		s.owners[js.UID] = true
		if c := meta.FindStatusCondition(js.Status.Conditions, string(jobsetv1alpha2.JobSetFailed)); c != nil && c.Status == metav1.ConditionTrue {
			s.Failed = c.DeepCopy()
		}
	case !apierrors.IsNotFound(err):
		return s, err
	}
	var jobs batchv1.JobList
	if err := r.List(ctx, &jobs, client.InNamespace(ns), client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: name}); err != nil {
		return s, err
	}
	for _, j := range jobs.Items {
		s.owners[j.UID] = true
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				s.FailedJobs = append(s.FailedJobs, JobFailure{Job: j.Name, Reason: c.Reason, Message: c.Message,
					ReplicatedJob: j.Labels[jobsetv1alpha2.ReplicatedJobNameKey], At: c.LastTransitionTime.Time})
			}
		}
	}
	if !withEvents {
		return s, nil
	}
	return s, s.ReadWarnings(ctx, r)
}

// ReadWarnings reads the Warning events on the JobSet and the Jobs s was
// read with (ReadJobSet without events), live, into s.Warnings: a caller
// that wants them only for what the JobSet shows reads it once.
func (s *JobSetState) ReadWarnings(ctx context.Context, r client.Reader) error {
	s.Warnings = nil
	if len(s.owners) == 0 {
		return nil
	}
	var events corev1.EventList
	if err := r.List(ctx, &events, client.InNamespace(s.namespace), client.MatchingFields{"type": corev1.EventTypeWarning}); err != nil {
		return err
	}
	for _, e := range events.Items {
		if s.owners[e.InvolvedObject.UID] {
			s.Warnings = append(s.Warnings, WarningOf(&e))
		}
	}
	return nil
}

// ExpectedPods are the Launcher and Worker pods the JobSet makes: replicas
// times parallelism of its "launcher" and "node" replicated jobs.
func ExpectedPods(js *jobsetv1alpha2.JobSet) (launchers, workers int32) {
	if js == nil {
		return 0, 0
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		n := rj.Replicas * ptr.Deref(rj.Template.Spec.Parallelism, 1)
		switch rj.Name {
		case trainerconstants.Launcher:
			launchers += n
		case trainerconstants.Node:
			workers += n
		}
	}
	return launchers, workers
}
