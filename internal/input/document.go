package input

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/gang"
	"github.com/mpiguard/mpiguard/internal/podsecurity"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// document is the policy input document: these types are its schema, and
// docs/policies.md ("The policy input document") describes them field by
// field. It reaches OPA as the value value.go builds, which is the
// value of its JSON encoding; amounts stay exact: they are json.Number,
// written from math/big. Maps and lists are never null (policies index them
// directly): the builders below give empty ones when there is nothing.
type document struct {
	Request     requestInput   `json:"request"`
	TrainJob    trainJobInput  `json:"trainJob"`
	OldTrainJob *trainJobInput `json:"oldTrainJob,omitempty"` // UPDATE only
	Job         jobInput       `json:"job"`
	Namespace   metaInput      `json:"namespace"`
	Quotas      []quotaInput   `json:"quotas"` // quota.go
	Runtime     runtimeInput   `json:"runtime"`
	Gang        *gang.Input    `json:"gang,omitempty"` // internal/gang; absent without a podGroupPolicy
	// Capacity is where the job's pods may go on the cluster's nodes
	// (internal/capacity); absent when no nodes are known.
	Capacity *capacity.Input `json:"capacity,omitempty"`
	// Parameters are each policy's parameters, checked and defaulted
	// against its schema when the set was loaded (internal/engine,
	// schema.go). The engine gives them per evaluation (Document.Value).
	Parameters map[string]any `json:"parameters"`
}

type requestInput struct {
	Operation Operation `json:"operation"`
	User      struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	DryRun bool `json:"dryRun"`
}

type trainJobInput struct {
	metaInput                    // name, labels, annotations
	Namespace             string `json:"namespace"`
	Suspend               bool   `json:"suspend"`
	ActiveDeadlineSeconds int64  `json:"activeDeadlineSeconds"` // 0 when unset
	// NumNodes and NumProcPerNode are spec.trainer's as written; absent when unset.
	NumNodes             *int32     `json:"numNodes,omitempty"`
	NumProcPerNode       *int32     `json:"numProcPerNode,omitempty"`
	Image                *string    `json:"image,omitempty"` // spec.trainer.image; absent when unset
	Env                  []envInput `json:"env"`
	RuntimePatchManagers []string   `json:"runtimePatchManagers"`
	// MpiguardEntries are the entries under mpiguard's manager as the
	// validating pass checked them (entries.go); empty for oldTrainJob.
	MpiguardEntries []entryInput `json:"mpiguardEntries"`
}

type envInput struct {
	Field string `json:"field"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

type entryInput struct {
	Field          string   `json:"field"`
	ForeignFields  []string `json:"foreignFields"`
	Differences    []string `json:"differences"`
	MpiguardWrites bool     `json:"mpiguardWrites"`
}

// jobInput is the JobView (internal/render): what the job will really create.
type jobInput struct {
	MPI               bool                 `json:"mpi"`
	MPIImplementation string               `json:"mpiImplementation"`
	RunLauncherAsNode bool                 `json:"runLauncherAsNode"`
	NumNodes          int32                `json:"numNodes"`
	SlotsPerWorker    int32                `json:"slotsPerWorker"`
	GPUsPerWorker     int64                `json:"gpusPerWorker"`
	ReplicatedJobs    []replicatedJobInput `json:"replicatedJobs"`
	// Launcher and Workers are two of ReplicatedJobs; absent when the runtime has none.
	Launcher *replicatedJobInput `json:"launcher,omitempty"`
	Workers  *replicatedJobInput `json:"workers,omitempty"`
	Total    chargeInput         `json:"total"`
	Problems []problemInput      `json:"problems"` // the rendered-pods policy denies them
	// PodSecurity is how the namespace's Pod Security levels judge the
	// rendered pods (internal/podsecurity); the pod-security policy
	// denies and warns on it.
	PodSecurity podsecurity.Result `json:"podSecurity"`
	// Objects are what the job creates besides pods and what object-count
	// quotas have for them (internal/quota); the object-quota policy denies.
	Objects quota.ObjectsInput `json:"objects"`
}

type replicatedJobInput struct {
	Name                      string                    `json:"name"`
	Role                      render.Role               `json:"role"`
	Pods                      int32                     `json:"pods"`
	PerPod                    chargeInput               `json:"perPod"`
	PriorityClassName         string                    `json:"priorityClassName"`
	Terminating               bool                      `json:"terminating"`
	Labels                    map[string]string         `json:"labels"`
	Annotations               map[string]string         `json:"annotations"`
	NodeSelector              map[string]string         `json:"nodeSelector"`
	RequiredNodeSelectorTerms []corev1.NodeSelectorTerm `json:"requiredNodeSelectorTerms"`
	// Images is the image of each container (not init containers), by name.
	Images map[string]string `json:"images"`
	// Requested are the labels and annotations as the runtime and every
	// runtime patch but mpiguard's own entry make them.
	Requested struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"requested"`
}

type chargeInput struct {
	Requests        map[string]quantityInput `json:"requests"`
	Limits          map[string]quantityInput `json:"limits"`
	Pods            int64                    `json:"pods"`
	MissingRequests []corev1.ResourceName    `json:"missingRequests"`
	MissingLimits   []corev1.ResourceName    `json:"missingLimits"`
}

// quantityInput gives Rego a quantity as numbers it can add exactly: Value in
// base units (fractional only for CPU), Milli the integer milli amount, and
// Display as kubectl prints it. Rego never parses quantity strings.
type quantityInput struct {
	Value   json.Number `json:"value"`
	Milli   json.Number `json:"milli"`
	Display string      `json:"display"`
}

type problemInput struct {
	Field  string `json:"field"`
	Type   string `json:"type"`
	Detail string `json:"detail"` // why the apiserver rejects the pod, how to fix it
}

type metaInput struct {
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type runtimeInput struct {
	Kind string `json:"kind"`
	metaInput
	// Constraints are the runtime's constraint annotations parsed by
	// runtimes/constraints.PolicyInput, malformed ones listed in "errors".
	Constraints map[string]any `json:"constraints"`
}

// build assembles the parts of the document of src's job, its quotas held
// as the quota state says; the engine gives the parameters and the entries'
// findings per evaluation (Document.Value).
func build(src *Source, state *QuotaState) document {
	in := document{
		Request:   requestInput{Operation: src.Operation, DryRun: src.DryRun},
		TrainJob:  trainJobOf(src.TrainJob),
		Job:       jobOf(src.View),
		Namespace: metaInput{Name: src.TrainJob.Namespace, Labels: map[string]string{}, Annotations: map[string]string{}},
		Quotas:    quotasOf(src, state),
		Runtime: runtimeInput{
			Kind:        src.Runtime.Kind,
			metaInput:   metaInput{Name: src.Runtime.Name, Labels: strings0(src.Runtime.Labels), Annotations: strings0(src.Runtime.Annotations)},
			Constraints: constraints.PolicyInput(src.Runtime.Annotations),
		},
	}
	in.Request.User.Username, in.Request.User.Groups = src.User, list(src.Groups)
	if ns := src.Namespace; ns != nil {
		in.Namespace = metaInput{Name: ns.Name, Labels: strings0(ns.Labels), Annotations: strings0(ns.Annotations)}
	}
	in.Job.PodSecurity = podSecurityOf(src.View, in.Namespace.Labels)
	in.Job.Objects = quota.ObjectsInputOf(src.View, src.Quotas, state.held())
	in.Gang = gang.InputOf(src.View, src.VolcanoQueues)
	in.Capacity = capacity.Of(src.View, src.Nodes, src.RuntimeClasses)
	if src.OldTrainJob != nil {
		old := trainJobOf(src.OldTrainJob)
		in.OldTrainJob = &old
	}
	return in
}

// trainJobOf is input.trainJob or input.oldTrainJob, its mpiguardEntries
// empty (the validating pass's findings are given per evaluation).
func trainJobOf(tj *trainer.TrainJob) trainJobInput {
	out := trainJobInput{
		metaInput:             metaInput{Name: tj.Name, Labels: strings0(tj.Labels), Annotations: strings0(tj.Annotations)},
		Namespace:             tj.Namespace,
		Suspend:               tj.Spec.Suspend != nil && *tj.Spec.Suspend,
		ActiveDeadlineSeconds: tj.Spec.ActiveDeadlineSeconds,
		Env:                   envOf(tj),
		RuntimePatchManagers:  []string{},
		MpiguardEntries:       []entryInput{},
	}
	if t := tj.Spec.Trainer; t != nil {
		out.NumNodes, out.NumProcPerNode, out.Image = t.NumNodes, t.NumProcPerNode, t.Image
	}
	for _, p := range tj.Spec.RuntimePatches {
		out.RuntimePatchManagers = append(out.RuntimePatchManagers, p.Manager)
	}
	return out
}

// entriesOf is input.trainJob.mpiguardEntries: the entries under mpiguard's
// manager as the validating pass checked them.
func entriesOf(entries []Entry) []entryInput {
	out := make([]entryInput, 0, len(entries))
	for _, e := range entries {
		out = append(out, entryInput{
			Field: e.field, ForeignFields: list(e.foreign), Differences: list(e.differences), MpiguardWrites: !e.unwanted,
		})
	}
	return out
}

// envOf lists every environment variable the user sets on the job, with the
// field path that sets it: spec.trainer.env and the containers of every
// runtime patch. Entries under mpiguard's manager included: mpiguard writes no
// env, so env there was written by someone posing as mpiguard, and is judged
// like any other (the mpiguard-entry policy denies the entry itself).
func envOf(tj *trainer.TrainJob) []envInput {
	out := []envInput{}
	if tj.Spec.Trainer != nil {
		for i, e := range tj.Spec.Trainer.Env {
			out = append(out, envInput{fmt.Sprintf("spec.trainer.env[%d]", i), e.Name, e.Value})
		}
	}
	for pi, p := range tj.Spec.RuntimePatches {
		if p.TrainingRuntimeSpec == nil || p.TrainingRuntimeSpec.Template == nil || p.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		for ji, rj := range p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
			if rj.Template == nil || rj.Template.Spec == nil || rj.Template.Spec.Template == nil || rj.Template.Spec.Template.Spec == nil {
				continue
			}
			for ci, c := range rj.Template.Spec.Template.Spec.Containers {
				for ei, e := range c.Env {
					field := fmt.Sprintf("spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].template.spec.template.spec.containers[%d].env[%d]", pi, ji, ci, ei)
					out = append(out, envInput{field, e.Name, e.Value})
				}
			}
		}
	}
	return out
}

func jobOf(v *render.JobView) jobInput {
	out := jobInput{
		MPI: v.MPI, MPIImplementation: v.MPIImplementation, RunLauncherAsNode: v.RunLauncherAsNode,
		NumNodes: v.NumNodes, SlotsPerWorker: v.SlotsPerWorker, GPUsPerWorker: v.GPUsPerWorker,
		ReplicatedJobs: make([]replicatedJobInput, len(v.ReplicatedJobs)),
		Total:          chargeOf(&v.Total),
		Problems:       []problemInput{},
	}
	for i := range v.ReplicatedJobs {
		rj := &v.ReplicatedJobs[i]
		out.ReplicatedJobs[i] = replicatedJobOf(rj)
		if v.Launcher != nil && v.Launcher.Name == rj.Name {
			out.Launcher = &out.ReplicatedJobs[i]
		}
		if v.Workers != nil && v.Workers.Name == rj.Name {
			out.Workers = &out.ReplicatedJobs[i]
		}
	}
	for _, p := range v.Problems {
		out.Problems = append(out.Problems, problemInput{Field: p.Field, Type: string(p.Type), Detail: p.ErrorBody()})
	}
	return out
}

func replicatedJobOf(rj *render.ReplicatedJobView) replicatedJobInput {
	spec := &rj.PodTemplate.Spec
	out := replicatedJobInput{
		Name: rj.Name, Role: rj.Role, Pods: rj.Pods,
		PerPod:                    chargeOf(&rj.PerPod),
		PriorityClassName:         rj.PriorityClassName,
		Terminating:               quota.Terminating(spec),
		Labels:                    strings0(rj.PodTemplate.Labels),
		Annotations:               strings0(rj.PodTemplate.Annotations),
		NodeSelector:              strings0(spec.NodeSelector),
		RequiredNodeSelectorTerms: []corev1.NodeSelectorTerm{},
		Images:                    make(map[string]string, len(spec.Containers)),
	}
	for _, c := range spec.Containers {
		out.Images[c.Name] = c.Image
	}
	// Without mpiguard's entry, what was asked for is the effective metadata.
	out.Requested.Labels, out.Requested.Annotations = out.Labels, out.Annotations
	if rj.Requested != nil {
		out.Requested.Labels, out.Requested.Annotations = strings0(rj.Requested.Labels), strings0(rj.Requested.Annotations)
	}
	if a := spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		out.RequiredNodeSelectorTerms = list(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	}
	return out
}

// podSecurityOf judges the rendered pods under the namespace's Pod Security
// labels, each reported at its replicated job's pod spec in the rendered
// JobSet (the paths input.job.problems uses).
func podSecurityOf(v *render.JobView, nsLabels map[string]string) podsecurity.Result {
	pods := make([]podsecurity.Pod, len(v.ReplicatedJobs))
	for i := range v.ReplicatedJobs {
		rj := &v.ReplicatedJobs[i]
		pods[i] = podsecurity.Pod{
			ReplicatedJob: rj.Name,
			Role:          string(rj.Role),
			Field:         "spec.replicatedJobs[" + rj.Name + "].template.spec.template.spec",
			Template:      &rj.PodTemplate,
		}
	}
	return podsecurity.Evaluate(nsLabels, pods)
}

func chargeOf(c *render.Charge) chargeInput {
	return chargeInput{
		Requests:        resourcesOf(c.Requests),
		Limits:          resourcesOf(c.Limits),
		Pods:            c.Pods,
		MissingRequests: list(c.MissingRequests),
		MissingLimits:   list(c.MissingLimits),
	}
}

func resourcesOf(l corev1.ResourceList) map[string]quantityInput {
	out := make(map[string]quantityInput, len(l))
	for name, q := range l {
		out[string(name)] = quantityOf(q)
	}
	return out
}

func quantityOf(q resource.Quantity) quantityInput {
	m := quota.Milli(q)
	return quantityInput{Value: units(m), Milli: number(m), Display: q.String()}
}

// units is a milli amount in base units, as an exact decimal number: 4, 1.5, 0.001.
func units(m *big.Int) json.Number {
	s := new(big.Rat).SetFrac(m, big.NewInt(1000)).FloatString(3) // "1.500", "4.000"
	return json.Number(strings.TrimSuffix(strings.TrimRight(s, "0"), "."))
}

func number(x *big.Int) json.Number { return json.Number(x.String()) }

// strings0 and list give empty maps and lists for nil: the input has no nulls.
func strings0(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
