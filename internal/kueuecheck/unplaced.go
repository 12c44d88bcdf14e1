package kueuecheck

import (
	"context"
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// Kueue v0.17 computes a TrainJob's pod sets from its runtime patches, so it
// sees the node affinity mpiguard's placement adds (data residency) and
// reserves only a flavor whose node labels satisfy it. A job whose
// ClusterQueue offers no such flavor is never reserved, so never offered to
// the check: without this, its check stays Pending with no word from
// mpiguard. explainUnplaced gives mpiguard's reason instead.

// waitsForPlacement says whether Kueue tried to reserve quota for the
// Workload and could not (QuotaReserved is False), while it is active and
// not finished.
func waitsForPlacement(wl *kueue.Workload) bool {
	c := meta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	return wl.Status.Admission == nil && c != nil && c.Status == metav1.ConditionFalse &&
		!meta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadFinished) &&
		ptr.Deref(wl.Spec.Active, true) && wl.DeletionTimestamp.IsZero()
}

// explainUnplaced writes mpiguard's reason on its pending checks of a
// Workload Kueue cannot place because the node affinity of one of its pod
// sets matches no flavor of its ClusterQueue, when mpiguard refuses the job
// on each of those flavors (judged against an idle namespace: the reason is
// not quota): the check stays Pending (Kueue acts on Rejected only once it
// has reserved quota; the Workload is left to Kueue, which places it if a
// fitting flavor appears) with the message, and the TrainJob gets a Warning
// event. A flavor mpiguard allows means mpiguard is not what keeps the job
// out (the user's own affinity, say): nothing is written.
func (r *Reconciler) explainUnplaced(ctx context.Context, wl *kueue.Workload) error {
	checks, err := r.checksIn(ctx, wl, kueue.CheckStatePending)
	if err != nil || len(checks) == 0 {
		return err
	}
	cq, flavors, err := r.queueFlavors(ctx, wl)
	if err != nil || len(flavors) == 0 || placeable(wl, flavors) {
		return err
	}
	job, _, err := r.trainJobOf(ctx, wl)
	if err != nil || job == nil {
		return err
	}
	denials, err := r.judgeOnFlavors(ctx, wl, job, cq, flavors)
	if err != nil || denials == nil {
		return err
	}
	msg := pipeline.Cut(fmt.Sprintf("Kueue cannot place this job: the node affinity of its pods (mpiguard's placement) matches no ResourceFlavor of ClusterQueue %s, and mpiguard refuses the job on each of them.\n%s", cq.Name, strings.Join(denials, "\n")), maxMessage, "…")
	if slices.IndexFunc(wl.Status.AdmissionChecks, func(s kueue.AdmissionCheckState) bool {
		return s.State == kueue.CheckStatePending && s.Message != msg && slices.ContainsFunc(checks, func(c ownCheck) bool { return c.name == s.Name })
	}) < 0 {
		return nil // said already
	}
	out := CheckState{State: kueue.CheckStatePending, Message: msg}
	if err := r.setState(ctx, wl, checks, out); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("admission check explained an unplaceable Workload", "clusterQueue", cq.Name)
	r.recorder.Eventf(job, wl, corev1.EventTypeWarning, ReasonUnplaceable, "KueueAdmissionCheck", "%s", pipeline.EventNote(msg, "on Workload "+wl.Name))
	return nil
}

// queueFlavors reads the ClusterQueue of the Workload's LocalQueue and its
// ResourceFlavors, in the order it lists them (missing ones left out). No
// ClusterQueue (yet): none.
func (r *Reconciler) queueFlavors(ctx context.Context, wl *kueue.Workload) (*kueue.ClusterQueue, []*kueue.ResourceFlavor, error) {
	lq := &kueue.LocalQueue{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}, lq); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	cq := &kueue.ClusterQueue{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: string(lq.Spec.ClusterQueue)}, cq); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	var out []*kueue.ResourceFlavor
	for _, rg := range cq.Spec.ResourceGroups {
		for _, fq := range rg.Flavors {
			f := &kueue.ResourceFlavor{}
			err := r.client.Get(ctx, client.ObjectKey{Name: string(fq.Name)}, f)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return nil, nil, fmt.Errorf("reading ResourceFlavor %q: %w", fq.Name, err)
			}
			out = append(out, f)
		}
	}
	return cq, out, nil
}

// placeable says whether every pod set of the Workload has a flavor whose
// node labels satisfy its node selector and required node affinity. Kueue
// leaves out the terms on keys no flavor of the ClusterQueue labels, so a
// pod set this finds unplaceable may still fit Kueue: the judgement that
// follows decides (and a pod set it finds placeable, Kueue can place too).
func placeable(wl *kueue.Workload, flavors []*kueue.ResourceFlavor) bool {
	for i := range wl.Spec.PodSets {
		affinity := nodeaffinity.GetRequiredNodeAffinity(&corev1.Pod{Spec: wl.Spec.PodSets[i].Template.Spec})
		if !slices.ContainsFunc(flavors, func(f *kueue.ResourceFlavor) bool {
			ok, err := affinity.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: f.Spec.NodeLabels}})
			return ok && err == nil
		}) {
			return false
		}
	}
	return true
}

// judgeOnFlavors judges the resume Kueue would make if it assigned each
// flavor, alone, to every pod set, against the namespace as if idle. It
// returns one line per flavor naming mpiguard's denial, or nil when mpiguard
// allows the job on one of them (or does not govern it).
func (r *Reconciler) judgeOnFlavors(ctx context.Context, wl *kueue.Workload, job *trainer.TrainJob, cq *kueue.ClusterQueue, flavors []*kueue.ResourceFlavor) ([]string, error) {
	quotas, err := reservations.LiveQuotas(ctx, r.cluster.Reader, r.cluster.Live, job.Namespace)
	if err != nil {
		return nil, err
	}
	idle := input.NewQuotaState(idleQuotas(quotas), nil, nil)
	old := job.DeepCopy()
	old.Spec.Suspend = ptr.To(true)
	var denials []string
	for _, f := range flavors {
		placed, err := placements(ctx, r.client, assignAll(wl, cq, kueue.ResourceFlavorReference(f.Name)))
		if err != nil {
			return nil, err
		}
		req := &pipeline.Request{Operation: engine.Update, TrainJob: resumed(job, placed), OldTrainJob: old, RecordLater: true}
		evaluation, err := r.pipeline.RunAgainst(ctx, r.cluster, req, pipeline.Admit, idle)
		if err != nil {
			return nil, fmt.Errorf("judging TrainJob %s/%s on ResourceFlavor %s: %w", job.Namespace, job.Name, f.Name, err)
		}
		if !evaluation.Governed || evaluation.Allowed() {
			return nil, nil
		}
		denials = append(denials, "On ResourceFlavor "+f.Name+": "+evaluation.DenialMessage())
	}
	return denials, nil
}

// assignAll is the admission of every pod set of the Workload to flavor, for
// every resource the flavor's resource group of cq covers.
func assignAll(wl *kueue.Workload, cq *kueue.ClusterQueue, flavor kueue.ResourceFlavorReference) *kueue.Admission {
	covered := map[corev1.ResourceName]kueue.ResourceFlavorReference{}
	for _, rg := range cq.Spec.ResourceGroups {
		if slices.ContainsFunc(rg.Flavors, func(fq kueue.FlavorQuotas) bool { return fq.Name == flavor }) {
			for _, res := range rg.CoveredResources {
				covered[res] = flavor
			}
		}
	}
	adm := &kueue.Admission{ClusterQueue: kueue.ClusterQueueReference(cq.Name)}
	for _, ps := range wl.Spec.PodSets {
		adm.PodSetAssignments = append(adm.PodSetAssignments, kueue.PodSetAssignment{Name: ps.Name, Flavors: covered, Count: ptr.To(ps.Count)})
	}
	return adm
}
