package render

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetcontrollers "sigs.k8s.io/jobset/pkg/controllers"
	"sigs.k8s.io/jobset/pkg/util/placement"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// Who creates an object for a TrainJob, as messages name them.
const (
	CreatorTrainer = "Trainer"
	CreatorJobSet  = "JobSet"
)

// SnapshotSuffix names the ConfigMap the Trainer (v2.3, pkg/runtime/core
// snapshot.go, unexported there) copies a job's runtime into on its first
// reconcile, before it builds anything else.
const SnapshotSuffix = "-runtime-snapshot"

// maxJobNames bounds how many Jobs of one replicated job are named: a
// runtime may ask for any number of replicas, and a name per replica would
// cost memory per request. The count stays exact; only the names stop.
const maxJobNames = 100

// Objects are the objects, other than pods, that one kind of creator makes
// of one kind for the job: what object-count quotas (count/jobs.batch,
// configmaps, ...) charge it.
type Objects struct {
	// GVK and Resource (the plural, lower case: jobs, configmaps) say what
	// they are; the quota resource name is count/<Resource>.<group>.
	GVK      schema.GroupVersionKind
	Resource string
	// Creator is who creates them: CreatorTrainer or CreatorJobSet.
	Creator string
	// ReplicatedJob is the replicated job whose Jobs these are; "" for
	// every other object.
	ReplicatedJob string
	// Count is how many the job creates; Names their names (at most
	// maxJobNames of a replicated job's Jobs).
	Count int32
	Names []string
	// Existing is how many of them exist already: the Trainer and JobSet do
	// not create them again (they apply or reuse them) and the quota's
	// status.used counts them. Render leaves it 0; a caller that reads the
	// cluster sets it (internal/pipeline).
	Existing int32
}

// Missing is how many of them the job will still create.
func (o *Objects) Missing() int32 { return max(o.Count-o.Existing, 0) }

// GroupResource is what they are, as quota names count them.
func (o *Objects) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: o.GVK.Group, Resource: o.Resource}
}

// objectsOf lists what the Trainer and the JobSet controller create for
// trainJob besides pods, from what the Trainer's component builder plugins
// returned (built: the JobSet, the MPI hostfile ConfigMap, a gang plugin's
// PodGroup, ...), the Secrets those plugins create when they are missing
// (askedSecrets: the MPI plugin's SSH auth Secret, which the offline client
// reports as existing so that no key pair is generated per render), the
// runtime snapshot the Trainer's core writes before it builds, and what the
// JobSet controller makes of the rendered JobSet (v0.12, pkg/controllers:
// its headless Service, its PersistentVolumeClaims, one Job per replica of
// each replicated job, replicas as the JobSet CRD defaults them).
func objectsOf(trainJob *trainer.TrainJob, built []apiruntime.ApplyConfiguration, askedSecrets []string, jobSet *jobsetv1alpha2.JobSet, replicas []int32) ([]Objects, error) {
	core := func(kind, name, creator string) Objects {
		return named(corev1.SchemeGroupVersion.WithKind(kind), creator, name)
	}
	out := []Objects{core("ConfigMap", trainJob.Name+SnapshotSuffix, CreatorTrainer)}
	for _, name := range askedSecrets {
		out = append(out, core("Secret", name, CreatorTrainer))
	}
	var plugins []Objects
	for _, obj := range built {
		gvk, name, err := identify(obj)
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, named(gvk, CreatorTrainer, name))
	}
	// The Trainer runs its plugins in the order of a map: sorted, every
	// replica lists them alike.
	slices.SortFunc(plugins, func(a, b Objects) int {
		return cmp.Or(cmp.Compare(a.GVK.String(), b.GVK.String()), cmp.Compare(a.Names[0], b.Names[0]))
	})
	out = append(out, plugins...)
	// The JobSet webhook defaults network.enableDNSHostnames to true; the
	// controller then creates the headless Service its pods' hostnames need.
	if net := jobSet.Spec.Network; net == nil || ptr.Deref(net.EnableDNSHostnames, true) {
		out = append(out, core("Service", jobsetcontrollers.GetSubdomain(jobSet), CreatorJobSet))
	}
	for _, policy := range jobSet.Spec.VolumeClaimPolicies {
		for _, t := range policy.Templates {
			out = append(out, core("PersistentVolumeClaim", jobsetcontrollers.GeneratePVCName(jobSet.Name, t.Name), CreatorJobSet))
		}
	}
	for i := range jobSet.Spec.ReplicatedJobs {
		rj := &jobSet.Spec.ReplicatedJobs[i]
		if replicas[i] <= 0 {
			continue
		}
		jobs := Objects{GVK: batchv1.SchemeGroupVersion.WithKind("Job"), Resource: "jobs", Creator: CreatorJobSet, ReplicatedJob: rj.Name, Count: replicas[i]}
		for n := range min(int(replicas[i]), maxJobNames) {
			jobs.Names = append(jobs.Names, placement.GenJobName(jobSet.Name, rj.Name, n))
		}
		out = append(out, jobs)
	}
	return out, nil
}

func named(gvk schema.GroupVersionKind, creator, name string) Objects {
	resource, _ := meta.UnsafeGuessKindToResource(gvk)
	return Objects{GVK: gvk, Resource: resource.Resource, Creator: creator, Count: 1, Names: []string{name}}
}

// identify reads the kind and name of an object a plugin built: typed
// apply configurations say them; anything else is read from its JSON form.
func identify(obj any) (schema.GroupVersionKind, string, error) {
	type described interface {
		GetAPIVersion() *string
		GetKind() *string
		GetName() *string
	}
	if d, ok := obj.(described); ok && d.GetKind() != nil && d.GetName() != nil {
		return schema.FromAPIVersionAndKind(ptr.Deref(d.GetAPIVersion(), ""), *d.GetKind()), *d.GetName(), nil
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return schema.GroupVersionKind{}, "", fmt.Errorf("reading an object the Trainer builds (%T): %w", obj, err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(data, &head); err != nil || head.Kind == "" {
		return schema.GroupVersionKind{}, "", fmt.Errorf("the Trainer builds an object (%T) whose kind mpiguard cannot read", obj)
	}
	return schema.FromAPIVersionAndKind(head.APIVersion, head.Kind), head.Metadata.Name, nil
}
