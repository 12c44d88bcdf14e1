package render

import (
	"encoding/json"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// templateCacheSize bounds the merged templates kept: one per runtime version
// and distinct set of runtime patches. Admission writes the same patch into
// every job of a namespace, so a cluster needs a few entries per runtime and
// residency zone; a miss only costs the merge and the conversion.
const templateCacheSize = 512

// templateCache keeps runtime templates with runtime patches merged in and
// converted to the apply configuration the Trainer's plugins work on. The
// Trainer does both on every render (a strategic merge patch, then a
// typed -> unstructured -> JSON -> apply configuration round trip): about half
// of rendering a patched job, and admission renders every submit twice. Both
// depend only on the runtime's spec and the patches.
//
// Entries are keyed by the runtime's UID and resourceVersion, so a runtime read
// from the apiserver is never served stale; runtimes without them are merged
// and converted on every render (`mpiguard check` gives the runtimes it reads
// from files both: internal/check, identity.go).
type templateCache struct {
	entries *lru.Cache // key string -> *mergedTemplate (never modified)
}

func newTemplateCache() *templateCache { return &templateCache{entries: lru.New(templateCacheSize)} }

// runtimeCacheKey names one version of a runtime, or is empty when the runtime
// has no UID or resourceVersion to tell its versions apart.
func runtimeCacheKey(kind string, rt client.Object) string {
	if rt.GetUID() == "" || rt.GetResourceVersion() == "" {
		return ""
	}
	return kind + "/" + rt.GetNamespace() + "/" + rt.GetName() + "/" + string(rt.GetUID()) + "/" + rt.GetResourceVersion()
}

// get returns the runtime template spec with trainJob's runtime patches merged
// in, from the cache when runtimeKey is not empty.
func (c *templateCache) get(runtimeKey string, trainJob *trainer.TrainJob, spec jobsetv1alpha2.JobSetSpec) (*mergedTemplate, error) {
	patches, err := specPatches(trainJob)
	if err != nil {
		return nil, err
	}
	if runtimeKey == "" {
		return newMergedTemplate(spec, patches)
	}
	var b strings.Builder
	b.WriteString(runtimeKey)
	for _, p := range patches {
		b.WriteByte(0)
		b.Write(p)
	}
	key := b.String()
	if v, ok := c.entries.Get(key); ok {
		return v.(*mergedTemplate), nil
	}
	t, err := newMergedTemplate(spec, patches)
	if err != nil {
		return nil, err
	}
	c.entries.Add(key, t)
	return t, nil
}

// specPatches returns the JSON of the runtime patches' JobSet specs, in order:
// what the Trainer merges into the runtime template.
func specPatches(trainJob *trainer.TrainJob) ([][]byte, error) {
	var patches [][]byte
	for _, p := range trainJob.Spec.RuntimePatches {
		if p.TrainingRuntimeSpec == nil || p.TrainingRuntimeSpec.Template == nil || p.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		data, err := json.Marshal(p.TrainingRuntimeSpec.Template.Spec)
		if err != nil {
			return nil, err
		}
		patches = append(patches, data)
	}
	return patches, nil
}

// mergeRuntimePatches is the Trainer v2.3.0's TrainingRuntime.mergeRuntimePatches
// (pkg/runtime/core/trainingruntime.go, unexported): each patch is a strategic
// merge patch on the JobSet spec, in order, then the replicated jobs get back
// the runtime's order.
func mergeRuntimePatches(spec jobsetv1alpha2.JobSetSpec, patches [][]byte) (jobsetv1alpha2.JobSetSpec, error) {
	order := make(map[string]int, len(spec.ReplicatedJobs))
	for i, rJob := range spec.ReplicatedJobs {
		order[rJob.Name] = i
	}
	for _, patch := range patches {
		source, err := json.Marshal(spec)
		if err != nil {
			return spec, err
		}
		merged, err := strategicpatch.StrategicMergePatch(source, patch, jobsetv1alpha2.JobSetSpec{})
		if err != nil {
			return spec, err
		}
		next := jobsetv1alpha2.JobSetSpec{}
		if err := json.Unmarshal(merged, &next); err != nil {
			return spec, err
		}
		spec = next
	}
	sort.SliceStable(spec.ReplicatedJobs, func(i, j int) bool {
		return order[spec.ReplicatedJobs[i].Name] < order[spec.ReplicatedJobs[j].Name]
	})
	return spec, nil
}
