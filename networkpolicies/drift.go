package networkpolicies

import (
	"encoding/json"
	"hash/fnv"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// appliedRecords remembers, per TrainJob, the fingerprint of the policy this
// process last applied. It only serves to name a write: when the stored policy
// differs from (or lacks) what we applied and the desired policy has not changed,
// someone else deleted or edited it, and the write is a repair. After a restart
// the memory is empty and the first correction is counted as created/updated.
type appliedRecords struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]appliedRecord
}

type appliedRecord struct {
	uid         types.UID
	fingerprint uint64
}

func newAppliedRecords() *appliedRecords {
	return &appliedRecords{jobs: map[types.NamespacedName]appliedRecord{}}
}

// applied reports whether this process already applied exactly want for job.
func (a *appliedRecords) applied(job *trainer.TrainJob, want uint64) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	rec, ok := a.jobs[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}]
	return ok && rec.uid == job.UID && rec.fingerprint == want
}

func (a *appliedRecords) record(job *trainer.TrainJob, fingerprint uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.jobs[types.NamespacedName{Namespace: job.Namespace, Name: job.Name}] = appliedRecord{uid: job.UID, fingerprint: fingerprint}
}

func (a *appliedRecords) forget(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.jobs, key)
}

// fingerprint hashes everything of the desired policy that the controller sets.
func fingerprint(p *networkingv1.NetworkPolicy) uint64 {
	data, err := json.Marshal(struct {
		Labels map[string]string
		Owners []metav1.OwnerReference
		Spec   networkingv1.NetworkPolicySpec
	}{p.Labels, p.OwnerReferences, p.Spec})
	if err != nil { // cannot happen for these plain types; make every write an "update" then
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return h.Sum64()
}

// ownership says whether an existing policy named after the job is ours to write.
type ownership int

const (
	// ownedByJob: controlled by this TrainJob.
	ownedByJob ownership = iota
	// ownedByUs: written by this controller for an earlier TrainJob of the same
	// name, or someone removed the owner reference but left our label. Ours to fix.
	ownedByUs
	// foreign: somebody else's policy that happens to have the job's name. Never
	// overwritten or deleted.
	foreign
)

func ownershipOf(p *networkingv1.NetworkPolicy, job *trainer.TrainJob) ownership {
	ref := metav1.GetControllerOf(p)
	switch {
	case ref != nil && ref.UID == job.UID:
		return ownedByJob
	case ref != nil && ref.Kind == trainer.TrainJobKind && ref.Name == job.Name &&
		strings.HasPrefix(ref.APIVersion, trainer.GroupVersion.Group+"/"):
		return ownedByUs
	case ref == nil && p.Labels[ManagedByLabel] == ManagedByValue:
		return ownedByUs
	}
	return foreign
}

// inSync reports whether the stored policy carries everything desired: the same
// spec, our labels with our values, and our controller reference. Fields others
// add without contradicting ours (extra labels, annotations) are left alone.
func inSync(have, want *networkingv1.NetworkPolicy) bool {
	if !equality.Semantic.DeepEqual(have.Spec, want.Spec) {
		return false
	}
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	ref := metav1.GetControllerOf(have)
	return ref != nil && equality.Semantic.DeepEqual(*ref, want.OwnerReferences[0])
}
