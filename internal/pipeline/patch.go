package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"gomodules.xyz/jsonpatch/v2"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// patchOperations returns the JSON patch that applies m to the object the
// apiserver sent (raw), touching only the paths mpiguard owns:
// /spec/activeDeadlineSeconds, mpiguard's own /spec/runtimePatches entry and
// labels the job lacks.
// It decides exactly as engine.Mutation.Apply does on job (raw decoded), so
// the patched object is what Apply makes of it.
//
// The patch is built on raw, not as a diff between raw and a re-encoding of
// the typed TrainJob: a field the compiled Trainer types do not know (a newer
// Trainer's, or one a CRD preserves) would be missing from the re-encoding, and
// the diff would remove it from the object.
func patchOperations(raw []byte, job *trainer.TrainJob, m *engine.Mutation) ([]jsonpatch.JsonPatchOperation, error) {
	var changes []jsonpatch.JsonPatchOperation
	if m.ActiveDeadlineSeconds != nil && job.Spec.ActiveDeadlineSeconds == 0 {
		// "add" replaces a member that is present (an explicit 0 or null).
		changes = append(changes, jsonpatch.NewOperation("add", "/spec/activeDeadlineSeconds", *m.ActiveDeadlineSeconds))
	}
	changes = append(changes, entryOperations(job, m)...)
	changes = append(changes, labelOperations(job, m)...)
	if len(changes) == 0 {
		return nil, nil
	}
	var top struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("reading the TrainJob: %w", err)
	}
	if len(top.Spec) == 0 || string(top.Spec) == "null" {
		// A JSON patch cannot add a member to an object that does not exist.
		changes = append([]jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/spec", map[string]any{})}, changes...)
	}
	return changes, nil
}

// labelOperations adds the labels Apply adds: the whole map when the job
// has no label at all (a JSON patch cannot add a member to a missing
// object), else each one.
func labelOperations(job *trainer.TrainJob, m *engine.Mutation) []jsonpatch.JsonPatchOperation {
	keys := m.MissingLabels(job)
	if len(keys) == 0 {
		return nil
	}
	if len(job.Labels) == 0 {
		all := map[string]string{}
		for _, k := range keys {
			all[k] = m.Labels[k]
		}
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/metadata/labels", all)}
	}
	ops := make([]jsonpatch.JsonPatchOperation, 0, len(keys))
	for _, k := range keys {
		escaped := strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels/"+escaped, m.Labels[k]))
	}
	return ops
}

// entryOperations writes mpiguard's own entry where Apply writes it.
func entryOperations(job *trainer.TrainJob, m *engine.Mutation) []jsonpatch.JsonPatchOperation {
	i, write := m.EntryTarget(job)
	switch {
	case !write:
		return nil
	case i >= 0:
		// mpiguard's entry is its own: replaced as a whole (without the time
		// of the content it replaces). The decoded list has the raw array's
		// order, so i is the raw index.
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("replace", fmt.Sprintf("/spec/runtimePatches/%d", i), m.RuntimePatch)}
	case len(job.Spec.RuntimePatches) == 0:
		// Absent, null or empty: set the whole list.
		return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/spec/runtimePatches", []*trainer.RuntimePatch{m.RuntimePatch})}
	}
	return []jsonpatch.JsonPatchOperation{jsonpatch.NewOperation("add", "/spec/runtimePatches/-", m.RuntimePatch)}
}
