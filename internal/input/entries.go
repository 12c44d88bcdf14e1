package input

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// AdmissionManager is the manager of mpiguard's own spec.runtimePatches entry.
const AdmissionManager = "mpiguard.io/admission"

// mpiguard's own spec.runtimePatches entry (manager AdmissionManager) is
// written by the mutating webhook, and the Trainer applies it like any other
// entry. Nothing stops a user from writing an entry under that manager
// themselves, so the validating pass checks each such entry is mpiguard's:
//
//   - it sets only what mpiguard writes (pod template labels, annotations,
//     node selector and required node affinity of named replicated jobs):
//     anything else (containers, env, volumes, ...) is never mpiguard's;
//   - its content is what the policies ask for on this job (the mutation the
//     mutating pass computes, computed again on the same input: mutations are
//     idempotent, as reinvocation already requires), or, on UPDATE, the entry
//     stored with the job;
//   - it is the only one.
//
// The findings go to the policies as input.trainJob.mpiguardEntries; the
// mpiguard-entry policy denies, with the message. Its env is evaluated like
// any other entry's (input.trainJob.env).

// Entry is what the validating pass found about one entry under
// mpiguard's manager: its index and path (field, spec.runtimePatches[i]), the
// paths of what it sets that mpiguard never writes (foreign), the paths where
// it differs from mpiguard's entry for this job (differences: the whole entry
// when mpiguard writes none), whether mpiguard writes no entry for this job or
// this is a second one (unwanted), whether its content is still to be compared
// with the mutation (pending), and mpiguard's entry of the stored TrainJob on
// UPDATE (stored, or nil).
type Entry struct {
	index                int
	field                string
	foreign, differences []string
	unwanted, pending    bool
	stored               *trainer.RuntimePatch
}

// maxEntryPaths bounds the paths reported per entry: the message names a few.
const maxEntryPaths = 20

// ownEntriesOf finds the entries under mpiguard's manager of src's TrainJob,
// with what can be told without the mutation: what they set that mpiguard
// never writes, a second entry, and on UPDATE the entry stored with the job.
func ownEntriesOf(src *Source) []Entry {
	var out []Entry
	for i := range src.TrainJob.Spec.RuntimePatches {
		p := &src.TrainJob.Spec.RuntimePatches[i]
		if p.Manager != AdmissionManager {
			continue
		}
		field := fmt.Sprintf("spec.runtimePatches[%d]", i)
		e := Entry{index: i, field: field, foreign: ForeignFields(field, p)}
		if old := src.OldTrainJob; src.Operation == Update && old != nil && OwnEntryIndex(old) >= 0 {
			e.stored = &old.Spec.RuntimePatches[OwnEntryIndex(old)]
		}
		switch {
		case len(out) > 0:
			e.differences, e.unwanted = []string{field}, true
		case e.stored != nil && SameEntry(e.stored.TrainingRuntimeSpec, p.TrainingRuntimeSpec):
			// Written when the job was admitted: the mutating pass of an
			// UPDATE leaves it alone when the policies ask for nothing new.
		default:
			e.pending = true
		}
		out = append(out, e)
	}
	return out
}

// OwnEntryIndex is the index of tj's first entry under mpiguard's manager, or
// -1: the one Mutation.Apply writes and an UPDATE compares with.
func OwnEntryIndex(tj *trainer.TrainJob) int {
	return slices.IndexFunc(tj.Spec.RuntimePatches, func(p trainer.RuntimePatch) bool { return p.Manager == AdmissionManager })
}

// Pending says whether e's content is still to be compared with the
// mutation (Compare).
func (e Entry) Pending() bool { return e.pending }

// Compare settles pending entry e of tj against want, mpiguard's entry for
// this job (nil: the mutation writes none; on UPDATE the stored one stays),
// and says whether it differs.
func (e *Entry) Compare(tj *trainer.TrainJob, want *trainer.RuntimePatch) bool {
	e.pending = false
	got := &tj.Spec.RuntimePatches[e.index]
	if want == nil {
		want = e.stored
	}
	if want == nil {
		e.differences, e.unwanted = []string{e.field}, true
		return true
	}
	if SameEntry(got.TrainingRuntimeSpec, want.TrainingRuntimeSpec) {
		return false
	}
	var paths []string
	diffJSON(e.field+".trainingRuntimeSpec", jsonOf(got.TrainingRuntimeSpec), jsonOf(want.TrainingRuntimeSpec), &paths)
	if len(paths) == 0 {
		paths = []string{e.field} // equal as JSON, unequal as Go values: name the entry
	}
	e.differences = paths
	return true
}

// SameEntry says whether two entries' contents are the same, as
// equality.Semantic does (nil and empty alike).
func SameEntry(a, b *trainer.TrainingRuntimeSpecPatch) bool {
	return equality.Semantic.DeepEqual(a, b)
}

// allowedEntry is the shape of what mpiguard writes: true accepts a value
// whole; "[]" is the schema of every list item.
var allowedEntry = map[string]any{
	"manager": true,
	"time":    true,
	"trainingRuntimeSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"replicatedJobs": map[string]any{"[]": map[string]any{
		"name": true,
		"template": map[string]any{"spec": map[string]any{"template": map[string]any{
			"metadata": map[string]any{"labels": true, "annotations": true},
			"spec": map[string]any{
				"nodeSelector": true,
				"affinity": map[string]any{"nodeAffinity": map[string]any{
					"requiredDuringSchedulingIgnoredDuringExecution": true,
				}},
			},
		}}},
	}}}}},
}

// ForeignFields lists the paths of what entry p sets outside what mpiguard
// writes (allowedEntry), each under field. It reads the entry as JSON, so a
// field a newer Trainer type adds counts as foreign without being listed.
func ForeignFields(field string, p *trainer.RuntimePatch) []string {
	var out []string
	walkForeign(field, jsonOf(p), allowedEntry, &out)
	sort.Strings(out)
	return out
}

func walkForeign(path string, v any, allowed any, out *[]string) {
	if len(*out) >= maxEntryPaths || !setValue(v) || allowed == true {
		return
	}
	schema, _ := allowed.(map[string]any)
	switch x := v.(type) {
	case map[string]any:
		if schema == nil {
			*out = append(*out, path)
			return
		}
		for k, child := range x {
			sub, ok := schema[k]
			if !ok {
				if setValue(child) {
					*out = append(*out, childPath(path, k))
				}
				continue
			}
			walkForeign(childPath(path, k), child, sub, out)
		}
	case []any:
		item, ok := schema["[]"]
		if !ok {
			*out = append(*out, path)
			return
		}
		for i, child := range x {
			walkForeign(fmt.Sprintf("%s[%d]", path, i), child, item, out)
		}
	default:
		*out = append(*out, path)
	}
}

// diffJSON lists the paths where got and want differ.
func diffJSON(path string, got, want any, out *[]string) {
	if len(*out) >= maxEntryPaths || (!setValue(got) && !setValue(want)) {
		return
	}
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if gok && wok {
		keys := make([]string, 0, len(gm)+len(wm))
		for k := range gm {
			keys = append(keys, k)
		}
		for k := range wm {
			if _, dup := gm[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			diffJSON(childPath(path, k), gm[k], wm[k], out)
		}
		return
	}
	gl, gok := got.([]any)
	wl, wok := want.([]any)
	if gok && wok && len(gl) == len(wl) {
		for i := range gl {
			diffJSON(fmt.Sprintf("%s[%d]", path, i), gl[i], wl[i], out)
		}
		return
	}
	if !equality.Semantic.DeepEqual(got, want) {
		*out = append(*out, path)
	}
}

// setValue says whether a JSON value sets anything: null and empty objects
// and lists (what omitempty leaves of unset typed fields) do not.
func setValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		for _, c := range x {
			if setValue(c) {
				return true
			}
		}
		return false
	case []any:
		return len(x) > 0
	}
	return true
}

// childPath appends a key as kubectl writes field paths: .name for field
// names, [key] for map keys such as label names.
func childPath(path, key string) string {
	if key == "" || strings.ContainsAny(key, "./[]") || isStringMap(path) {
		return path + "[" + key + "]"
	}
	return path + "." + key
}

// isStringMap says whether path is a map of user keys (labels, annotations,
// node selector), whose keys are written [key] whatever they look like.
func isStringMap(path string) bool {
	for _, m := range []string{".labels", ".annotations", ".nodeSelector"} {
		if strings.HasSuffix(path, m) {
			return true
		}
	}
	return false
}

// jsonOf is v as generic JSON. v is a typed API value: it always encodes.
func jsonOf(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil
	}
	return out
}
