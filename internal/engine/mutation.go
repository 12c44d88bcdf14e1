package engine

import (
	"encoding/json"
	"fmt"
	"sort"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/internal/input"
)

// AdmissionManager is the manager of mpiguard's own spec.runtimePatches entry.
const AdmissionManager = input.AdmissionManager

// Fields policies may mutate (the "field" of a mutate result).
const (
	fieldActiveDeadline = "spec.activeDeadlineSeconds"
	// fieldTrainJobLabels (target trainJob, with a key): a label the
	// TrainJob lacks, added (an existing one is never changed), e.g. the
	// runtime's default Kueue priority class.
	fieldTrainJobLabels = "metadata.labels"
	fieldPodLabels      = "metadata.labels"
	fieldPodAnnotations = "metadata.annotations"
	fieldNodeSelector   = "spec.nodeSelector"
	fieldRequiredTerms  = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
)

// Change is one mutation a policy asked for.
type Change struct {
	Policy string `json:"policy"`
	// Target is "trainJob" (Field is a TrainJob field) or "podTemplate" (Field is
	// a field of ReplicatedJob's pod template, written to mpiguard's runtime patch).
	Target        string `json:"target"`
	ReplicatedJob string `json:"replicatedJob,omitempty"`
	Field         string `json:"field"`
	Key           string `json:"key,omitempty"`
	Value         any    `json:"value"`
}

// Mutation is what the policies change on a TrainJob: at most the deadline and
// mpiguard's own runtimePatches entry. spec.trainer is never touched.
type Mutation struct {
	ActiveDeadlineSeconds *int64
	// Labels are TrainJob labels added where the job has none of that key.
	Labels map[string]string
	// RuntimePatch is the complete desired entry for AdmissionManager, nil when no
	// policy patches pod templates.
	RuntimePatch *trainer.RuntimePatch
	// Changes lists every requested change, for --show-patches and the decision log.
	Changes []Change
}

// Empty says whether there is nothing to apply.
func (m *Mutation) Empty() bool {
	return m.ActiveDeadlineSeconds == nil && m.RuntimePatch == nil && len(m.Labels) == 0
}

// MissingLabels are the keys of m.Labels that tj does not have, sorted:
// the labels Apply adds.
func (m *Mutation) MissingLabels(tj *trainer.TrainJob) []string {
	var keys []string
	for k := range m.Labels {
		if _, ok := tj.Labels[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Apply writes the mutation into tj and reports whether tj changed. It is
// idempotent: applying it again changes nothing. mpiguard's entry is replaced
// as a whole (its time is kept when the content is the same) and appended last
// when absent, so its patches win over earlier entries.
func (m *Mutation) Apply(tj *trainer.TrainJob) bool {
	changed := false
	for _, k := range m.MissingLabels(tj) {
		if tj.Labels == nil {
			tj.Labels = map[string]string{}
		}
		tj.Labels[k] = m.Labels[k]
		changed = true
	}
	if m.ActiveDeadlineSeconds != nil && tj.Spec.ActiveDeadlineSeconds == 0 {
		tj.Spec.ActiveDeadlineSeconds = *m.ActiveDeadlineSeconds
		changed = true
	}
	i, write := m.EntryTarget(tj)
	switch {
	case !write:
	case i < 0:
		tj.Spec.RuntimePatches = append(tj.Spec.RuntimePatches, *m.RuntimePatch.DeepCopy())
		changed = true
	default:
		p := &tj.Spec.RuntimePatches[i]
		p.TrainingRuntimeSpec = m.RuntimePatch.TrainingRuntimeSpec.DeepCopy()
		p.Time = nil
		changed = true
	}
	return changed
}

// EntryTarget says where the mutation writes mpiguard's entry in tj: write is
// false when there is nothing to write (no entry wanted, or the one there is
// already it); otherwise i is the index of the entry to replace, or -1 to
// append one. An entry under mpiguard's manager that sets what mpiguard never
// writes (containers, env, ...) is left alone: it is not mpiguard's, and
// replacing it would silently drop what its author asked for; the validating
// pass denies it, saying so (internal/input, entries.go).
func (m *Mutation) EntryTarget(tj *trainer.TrainJob) (i int, write bool) {
	if m.RuntimePatch == nil {
		return 0, false
	}
	i = input.OwnEntryIndex(tj)
	if i < 0 {
		return -1, true
	}
	p := &tj.Spec.RuntimePatches[i]
	return i, !input.SameEntry(p.TrainingRuntimeSpec, m.RuntimePatch.TrainingRuntimeSpec) && len(input.ForeignFields("", p)) == 0
}

// buildMutation turns the policies' changes into a Mutation. Conflicting
// changes (two values for one key) and fields outside the allowed set are
// errors: a mutation is never half applied.
func buildMutation(changes []Change) (Mutation, error) {
	m := Mutation{Changes: changes}
	pods := map[string]*trainer.PodTemplatePatch{}
	podFor := func(name string) *trainer.PodTemplatePatch {
		p, ok := pods[name]
		if !ok {
			p = &trainer.PodTemplatePatch{}
			pods[name] = p
		}
		return p
	}
	for _, c := range changes {
		switch {
		case c.Target == "trainJob" && c.Field == fieldActiveDeadline:
			var n int64
			if err := convert(c.Value, &n); err != nil || n <= 0 {
				return Mutation{}, fmt.Errorf("policy %s: %s must be a positive integer, got %v", c.Policy, c.Field, c.Value)
			}
			if m.ActiveDeadlineSeconds != nil && *m.ActiveDeadlineSeconds != n {
				return Mutation{}, fmt.Errorf("policies set %s to both %d and %d", c.Field, *m.ActiveDeadlineSeconds, n)
			}
			m.ActiveDeadlineSeconds = &n
		case c.Target == "trainJob" && c.Field == fieldTrainJobLabels:
			v, ok := c.Value.(string)
			if !ok || c.Key == "" {
				return Mutation{}, fmt.Errorf("policy %s: trainJob %s needs a key and a string value, got key %q value %v", c.Policy, c.Field, c.Key, c.Value)
			}
			if old, set := m.Labels[c.Key]; set && old != v {
				return Mutation{}, fmt.Errorf("policies set TrainJob label %s to both %q and %q", c.Key, old, v)
			}
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			m.Labels[c.Key] = v
		case c.Target == "podTemplate" && c.ReplicatedJob != "":
			if err := applyPodChange(podFor(c.ReplicatedJob), c); err != nil {
				return Mutation{}, err
			}
		case c.Target == "podTemplate":
			// A runtime patch finds a replicated job by name: one named ""
			// (a runtime's, or a policy's omission) cannot be patched.
			return Mutation{}, fmt.Errorf("policy %s: cannot change %s of a pod template without the name of its replicated job (replicatedJob is empty): runtime patches find replicated jobs by name; give every replicated job of the runtime (spec.template.spec.replicatedJobs[].name) a name",
				c.Policy, c.Field)
		default:
			return Mutation{}, fmt.Errorf("policy %s: cannot mutate %s field %q (allowed: trainJob %s, %s; podTemplate %s, %s, %s, %s)",
				c.Policy, c.Target, c.Field, fieldActiveDeadline, fieldTrainJobLabels, fieldPodLabels, fieldPodAnnotations, fieldNodeSelector, fieldRequiredTerms)
		}
	}
	if len(pods) == 0 {
		return m, nil
	}
	names := make([]string, 0, len(pods))
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	rjs := make([]trainer.ReplicatedJobPatch, 0, len(names))
	for _, n := range names {
		rjs = append(rjs, trainer.ReplicatedJobPatch{
			Name:     n,
			Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: pods[n]}},
		})
	}
	m.RuntimePatch = &trainer.RuntimePatch{
		Manager: AdmissionManager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
			Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: rjs}},
		},
	}
	return m, nil
}

func applyPodChange(p *trainer.PodTemplatePatch, c Change) error {
	setKey := func(m *map[string]string) error {
		v, ok := c.Value.(string)
		if !ok || c.Key == "" {
			return fmt.Errorf("policy %s: %s needs a key and a string value, got key %q value %v", c.Policy, c.Field, c.Key, c.Value)
		}
		if *m == nil {
			*m = map[string]string{}
		}
		if old, set := (*m)[c.Key]; set && old != v {
			return fmt.Errorf("policies set %s %s of replicated job %s to both %q and %q", c.Field, c.Key, c.ReplicatedJob, old, v)
		}
		(*m)[c.Key] = v
		return nil
	}
	meta := func() *metav1.ObjectMeta {
		if p.Metadata == nil {
			p.Metadata = &metav1.ObjectMeta{}
		}
		return p.Metadata
	}
	spec := func() *trainer.PodSpecPatch {
		if p.Spec == nil {
			p.Spec = &trainer.PodSpecPatch{}
		}
		return p.Spec
	}
	switch c.Field {
	case fieldPodLabels:
		return setKey(&meta().Labels)
	case fieldPodAnnotations:
		return setKey(&meta().Annotations)
	case fieldNodeSelector:
		return setKey(&spec().NodeSelector)
	case fieldRequiredTerms:
		var terms []corev1.NodeSelectorTerm
		if err := convert(c.Value, &terms); err != nil {
			return fmt.Errorf("policy %s: %s: %w", c.Policy, c.Field, err)
		}
		s := spec()
		if s.Affinity == nil {
			s.Affinity = &corev1.Affinity{}
		}
		if s.Affinity.NodeAffinity == nil {
			s.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		na := s.Affinity.NodeAffinity
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil && !equality.Semantic.DeepEqual(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, terms) {
			return fmt.Errorf("policies set different required node affinity for replicated job %s", c.ReplicatedJob)
		}
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: terms}
		return nil
	}
	return fmt.Errorf("policy %s: cannot mutate pod template field %q (allowed: %s, %s, %s, %s)",
		c.Policy, c.Field, fieldPodLabels, fieldPodAnnotations, fieldNodeSelector, fieldRequiredTerms)
}

// convert decodes a Rego result value (JSON-shaped) into a typed value.
func convert(in any, out any) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
