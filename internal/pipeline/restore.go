package pipeline

import (
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"

	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/input"
)

// restoreStored adds to m, the mutation of an UPDATE, what mpiguard decided
// for the stored TrainJob old that the update job leaves out:
//
//   - spec.activeDeadlineSeconds, when job has none and old has one. The
//     field is immutable, but the CRD's rule (self == oldSelf) does not fire
//     when an update removes it;
//   - mpiguard's own spec.runtimePatches entry, the stored one as it is,
//     when job has no entry under mpiguard's manager.
//
// A controller compiled against an older TrainJob type (every Kueue the
// module proxy serves targets Trainer v2.0/v2.1, which has neither field)
// writes whole objects without them: without this, each of its updates
// would silently undo mpiguard's Istio opt-out, residency affinity and
// default deadline. The stored values are restored, not recomputed: they are
// what was admitted, and what the mpiguard-entry policy compares an UPDATE's
// entry with. An entry that is present but changed is not restored: it is
// someone's explicit change, and mpiguard-entry denies it with the reason.
//
// What a policy asks for on this update comes first: restoreStored fills in
// only what m leaves unset. Like every mutation it is idempotent: applied to
// its own result it adds nothing (the apiserver reinvokes the webhook).
func restoreStored(m *engine.Mutation, old, job *trainer.TrainJob) {
	if old == nil {
		return
	}
	if m.ActiveDeadlineSeconds == nil && job.Spec.ActiveDeadlineSeconds == 0 && old.Spec.ActiveDeadlineSeconds > 0 {
		m.ActiveDeadlineSeconds = new(old.Spec.ActiveDeadlineSeconds)
	}
	if m.RuntimePatch == nil && input.OwnEntryIndex(job) < 0 {
		if i := input.OwnEntryIndex(old); i >= 0 {
			m.RuntimePatch = old.Spec.RuntimePatches[i].DeepCopy()
		}
	}
}
