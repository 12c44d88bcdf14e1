package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/api/equality"
)

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

// ownEntry is what the validating pass found about one entry under mpiguard's manager.
type ownEntry struct {
	index int
	// field is the entry's path, spec.runtimePatches[i].
	field string
	// foreign are the paths of what it sets that mpiguard never writes.
	foreign []string
	// differences are the paths where it differs from mpiguard's entry for
	// this job; the whole entry when mpiguard writes none.
	differences []string
	// unwanted says mpiguard writes no entry for this job, or this is a
	// second one (mpiguard writes one).
	unwanted bool
	// pending says the content is still to be compared with the mutation.
	pending bool
	// stored is mpiguard's entry of the stored TrainJob on UPDATE, or nil.
	stored *trainer.RuntimePatch
}

// maxEntryPaths bounds the paths reported per entry: the message names a few.
const maxEntryPaths = 20

// ownEntriesOf finds the entries under mpiguard's manager of req's TrainJob,
// with what can be told without the mutation: what they set that mpiguard
// never writes, a second entry, and on UPDATE the entry stored with the job.
func ownEntriesOf(req *Request) []ownEntry {
	var out []ownEntry
	for i := range req.TrainJob.Spec.RuntimePatches {
		p := &req.TrainJob.Spec.RuntimePatches[i]
		if p.Manager != AdmissionManager {
			continue
		}
		field := fmt.Sprintf("spec.runtimePatches[%d]", i)
		e := ownEntry{index: i, field: field, foreign: foreignFields(field, p)}
		if req.Operation == Update {
			e.stored = storedEntry(req.OldTrainJob)
		}
		switch {
		case len(out) > 0:
			e.differences, e.unwanted = []string{field}, true
		case e.stored != nil && sameEntry(e.stored.TrainingRuntimeSpec, p.TrainingRuntimeSpec):
			// Written when the job was admitted: the mutating pass of an
			// UPDATE leaves it alone when the policies ask for nothing new.
		default:
			e.pending = true
		}
		out = append(out, e)
	}
	return out
}

// storedEntry is mpiguard's entry of the stored TrainJob, or nil.
func storedEntry(old *trainer.TrainJob) *trainer.RuntimePatch {
	if old == nil {
		return nil
	}
	if i := ownEntryIndex(old); i >= 0 {
		return &old.Spec.RuntimePatches[i]
	}
	return nil
}

// ownEntryIndex is the index of tj's first entry under mpiguard's manager, or
// -1: the one Mutation.Apply writes and an UPDATE compares with.
func ownEntryIndex(tj *trainer.TrainJob) int {
	return slices.IndexFunc(tj.Spec.RuntimePatches, func(p trainer.RuntimePatch) bool { return p.Manager == AdmissionManager })
}

// pendingEntry returns the entry whose content waits for the mutation, or nil.
func pendingEntry(entries []ownEntry) *ownEntry {
	for i := range entries {
		if entries[i].pending {
			return &entries[i]
		}
	}
	return nil
}

// compareEntry settles a pending entry against want, mpiguard's entry for this
// job (nil: the mutation writes none; on UPDATE the stored one stays), and
// says whether it differs.
func compareEntry(e *ownEntry, tj *trainer.TrainJob, want *trainer.RuntimePatch) bool {
	e.pending = false
	got := &tj.Spec.RuntimePatches[e.index]
	if want == nil {
		want = e.stored
	}
	if want == nil {
		e.differences, e.unwanted = []string{e.field}, true
		return true
	}
	if sameEntry(got.TrainingRuntimeSpec, want.TrainingRuntimeSpec) {
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

// sameEntry says whether two entries' contents are the same, as
// equality.Semantic does (nil and empty alike), trying reflect.DeepEqual
// first: several times cheaper, and what an entry written by Apply and the
// mutation computed again give.
func sameEntry(a, b *trainer.TrainingRuntimeSpecPatch) bool {
	return reflect.DeepEqual(a, b) || equality.Semantic.DeepEqual(a, b)
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

// foreignFields lists the paths of what entry p sets outside allowedEntry.
func foreignFields(field string, p *trainer.RuntimePatch) []string {
	if !mayBeForeign(p) {
		return nil // the common case, without encoding the entry
	}
	var out []string
	walkForeign(field, jsonOf(p), allowedEntry, &out)
	sort.Strings(out)
	return out
}

// mayBeForeign is a quick, conservative check that p sets nothing outside
// allowedEntry: it clears what mpiguard writes from shallow copies and asks
// whether anything is left, so a field a newer Trainer type adds counts as
// foreign without being listed. False means foreignFields finds none; true
// means foreignFields must look (it ignores empty values that this counts).
func mayBeForeign(p *trainer.RuntimePatch) bool {
	set := func(v any) bool { return !reflect.ValueOf(v).IsZero() }
	rs := p.TrainingRuntimeSpec
	if rs == nil {
		return false
	}
	if c := *rs; unset(&c.Template) && set(c) {
		return true
	}
	t := rs.Template
	if t == nil || t.Metadata != nil {
		return t != nil
	}
	if t.Spec == nil {
		return false
	}
	if c := *t.Spec; unset(&c.ReplicatedJobs) && set(c) {
		return true
	}
	for _, rj := range t.Spec.ReplicatedJobs {
		jt := rj.Template
		if c := rj; unset(&c.Name) && unset(&c.Template) && set(c) {
			return true
		}
		if jt == nil {
			continue
		}
		if jt.Metadata != nil {
			return true
		}
		if jt.Spec == nil {
			continue
		}
		if c := *jt.Spec; unset(&c.Template) && set(c) {
			return true
		}
		pod := jt.Spec.Template
		if pod == nil {
			continue
		}
		if m := pod.Metadata; m != nil {
			if c := *m; unset(&c.Labels) && unset(&c.Annotations) && set(c) {
				return true
			}
		}
		ps := pod.Spec
		if ps == nil {
			continue
		}
		if c := *ps; unset(&c.NodeSelector) && unset(&c.Affinity) && set(c) {
			return true
		}
		if a := ps.Affinity; a != nil {
			if c := *a; unset(&c.NodeAffinity) && set(c) {
				return true
			}
			if na := a.NodeAffinity; na != nil {
				if c := *na; unset(&c.RequiredDuringSchedulingIgnoredDuringExecution) && set(c) {
					return true
				}
			}
		}
	}
	return false
}

// unset sets *v to its zero value and returns true, to chain in conditions.
func unset[T any](v *T) bool {
	var zero T
	*v = zero
	return true
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

// ownEntriesTerm is input.trainJob.mpiguardEntries.
func ownEntriesTerm(entries []ownEntry) *ast.Term {
	if len(entries) == 0 {
		return emptyArray
	}
	out := make([]*ast.Term, len(entries))
	for i, e := range entries {
		out[i] = ast.ObjectTerm(
			item(kField, ast.StringTerm(e.field)),
			item(kForeignFields, stringsTerm(e.foreign)),
			item(kDifferences, stringsTerm(e.differences)),
			item(kMpiguardWrites, boolTerm(!e.unwanted)),
		)
	}
	return ast.ArrayTerm(out...)
}

var (
	kMpiguardEntries = ast.StringTerm("mpiguardEntries")
	kForeignFields   = ast.StringTerm("foreignFields")
	kDifferences     = ast.StringTerm("differences")
	kMpiguardWrites  = ast.StringTerm("mpiguardWrites")
)
