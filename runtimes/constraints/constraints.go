// Package constraints reads the limits a cluster admin states on a
// (Cluster)TrainingRuntime through annotations, so that TrainJobs referencing the
// runtime can be checked against them at admission (by the Rego policies, which
// receive Constraints as part of their input).
//
// Schema (all optional; absent means unconstrained):
//
//	mpiguard.io/max-nodes: "8"                        hostfile nodes per TrainJob (spec.trainer.numNodes:
//	                                                  every Worker, and the Launcher when it runs as a
//	                                                  node), >= 1; mpiguard.io/max-workers, its former
//	                                                  name, is read as it
//	mpiguard.io/max-gpus-per-worker: "4"              GPUs of one Worker pod, >= 0
//	mpiguard.io/required-node-labels: "pool=gpu,nvidia.com/gpu.present"
//	                                                  every launcher and Worker pod must be pinned
//	                                                  (nodeSelector or required node affinity) to
//	                                                  nodes with these labels; "key" alone = any value
//	mpiguard.io/allowed-namespaces: "team-a,ml-*"     namespaces (path.Match globs) whose
//	                                                  TrainJobs may use the runtime
package constraints

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Annotation keys.
const (
	// AnnotationMaxNodes caps spec.trainer.numNodes, the hostfile nodes of a
	// TrainJob: every Worker, and the Launcher when the runtime runs it as a
	// node (README.md, "Vocabulary").
	AnnotationMaxNodes = "mpiguard.io/max-nodes"
	// AnnotationMaxWorkers is the former name of AnnotationMaxNodes, read as
	// it (the same count, spec.trainer.numNodes, although it is not a count
	// of Workers): runtimes annotated with it keep their limit.
	AnnotationMaxWorkers         = "mpiguard.io/max-workers"
	AnnotationMaxGPUsPerWorker   = "mpiguard.io/max-gpus-per-worker"
	AnnotationRequiredNodeLabels = "mpiguard.io/required-node-labels"
	AnnotationAllowedNamespaces  = "mpiguard.io/allowed-namespaces"
)

// Keys lists every constraint annotation, in documentation order.
var Keys = []string{AnnotationMaxNodes, AnnotationMaxWorkers, AnnotationMaxGPUsPerWorker, AnnotationRequiredNodeLabels, AnnotationAllowedNamespaces,
	AnnotationAllowedPriorityClasses, AnnotationDefaultPriorityClass, AnnotationGangScheduleTimeoutSeconds, AnnotationGangMinAvailable}

// Constraints are the parsed limits of one runtime. The JSON form is what the
// Rego policies see (input.runtime.constraints); nil/empty fields are absent.
type Constraints struct {
	// MaxNodes caps spec.trainer.numNodes (AnnotationMaxNodes).
	MaxNodes *int32 `json:"maxNodes,omitempty"`
	// MaxGPUsPerWorker caps the GPUs one Worker pod requests (all GPU resources summed).
	MaxGPUsPerWorker *int64 `json:"maxGPUsPerWorker,omitempty"`
	// RequiredNodeLabels maps label key to value; "" means the key with any value.
	RequiredNodeLabels map[string]string `json:"requiredNodeLabels,omitempty"`
	// AllowedNamespaces are path.Match globs; empty allows every namespace.
	AllowedNamespaces []string `json:"allowedNamespaces,omitempty"`
	// AllowedPriorityClasses and DefaultPriorityClass: governance.go.
	AllowedPriorityClasses []string `json:"allowedPriorityClasses,omitempty"`
	DefaultPriorityClass   string   `json:"defaultPriorityClass,omitempty"`
	// GangScheduleTimeoutSeconds bounds a coscheduling gang's timeout.
	GangScheduleTimeoutSeconds *Range `json:"gangScheduleTimeoutSeconds,omitempty"`
	// GangMinAvailable is "all" or a whole number: the job must be
	// gang-scheduled with at least that many pods in its gang.
	GangMinAvailable string `json:"gangMinAvailable,omitempty"`
}

// IsZero reports whether the runtime states no constraint at all.
func (c Constraints) IsZero() bool {
	return c.MaxNodes == nil && c.MaxGPUsPerWorker == nil && len(c.RequiredNodeLabels) == 0 && len(c.AllowedNamespaces) == 0 &&
		len(c.AllowedPriorityClasses) == 0 && c.DefaultPriorityClass == "" && c.GangScheduleTimeoutSeconds == nil && c.GangMinAvailable == ""
}

var annotationsPath = field.NewPath("metadata", "annotations")

// Parse reads the constraint annotations. Malformed values are returned as
// field errors that say what is wrong and what a valid value looks like; the
// well-formed ones are still parsed, so one typo does not lift every limit.
func Parse(annotations map[string]string) (Constraints, field.ErrorList) {
	var c Constraints
	var errs field.ErrorList
	for _, key := range []string{AnnotationMaxNodes, AnnotationMaxWorkers} {
		v, ok := annotations[key]
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		switch {
		case err != nil || n < 1:
			errs = append(errs, field.Invalid(annotationsPath.Key(key), v,
				"must be a whole number of hostfile nodes (spec.trainer.numNodes: every Worker, and the Launcher when it runs as a node), at least 1 (e.g. \"8\")"))
		case c.MaxNodes != nil && *c.MaxNodes != int32(n):
			errs = append(errs, field.Invalid(annotationsPath.Key(key), v,
				fmt.Sprintf("is the former name of %s, which says %d: remove %s", AnnotationMaxNodes, *c.MaxNodes, AnnotationMaxWorkers)))
		case c.MaxNodes == nil:
			c.MaxNodes = ptrTo(int32(n))
		}
	}
	if v, ok := annotations[AnnotationMaxGPUsPerWorker]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, field.Invalid(annotationsPath.Key(AnnotationMaxGPUsPerWorker), v,
				"must be a whole number of GPUs, 0 or more (e.g. \"4\"; \"0\" forbids GPUs)"))
		} else {
			c.MaxGPUsPerWorker = ptrTo(n)
		}
	}
	if v, ok := annotations[AnnotationRequiredNodeLabels]; ok {
		c.RequiredNodeLabels, errs = parseNodeLabels(v, errs)
	}
	if v, ok := annotations[AnnotationAllowedNamespaces]; ok {
		c.AllowedNamespaces, errs = parseNamespaces(v, errs)
	}
	errs = parseGovernance(annotations, &c, errs)
	return c, errs
}

func parseNodeLabels(v string, errs field.ErrorList) (map[string]string, field.ErrorList) {
	p := annotationsPath.Key(AnnotationRequiredNodeLabels)
	out := map[string]string{}
	for _, item := range splitList(v) {
		key, value, _ := strings.Cut(item, "=")
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%q is not a valid label key (%s); write comma-separated key=value or key items, e.g. \"pool=gpu,nvidia.com/gpu.present\"", key, strings.Join(msgs, "; "))))
			continue
		}
		if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%q is not a valid label value for %q (%s)", value, key, strings.Join(msgs, "; "))))
			continue
		}
		out[key] = value
	}
	if len(out) == 0 {
		errs = append(errs, field.Invalid(p, v, "lists no label; write comma-separated key=value or key items, or remove the annotation"))
		return nil, errs
	}
	return out, errs
}

func parseNamespaces(v string, errs field.ErrorList) ([]string, field.ErrorList) {
	p := annotationsPath.Key(AnnotationAllowedNamespaces)
	var out []string
	for _, item := range splitList(v) {
		if _, err := path.Match(item, ""); err != nil {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%q is not a valid namespace glob: %v", item, err)))
			continue
		}
		if problem := globProblem(item); problem != "" {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%q is ambiguous: %s", item, problem)))
			continue
		}
		out = append(out, item)
	}
	if len(out) == 0 {
		errs = append(errs, field.Invalid(p, v, "lists no namespace; write comma-separated names or globs (e.g. \"team-a,ml-*\"), or remove the annotation"))
		return nil, errs
	}
	return out, errs
}

func splitList(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// NamespaceAllowed reports whether TrainJobs in ns may use the runtime.
func (c Constraints) NamespaceAllowed(ns string) bool {
	if len(c.AllowedNamespaces) == 0 {
		return true
	}
	for _, g := range c.AllowedNamespaces {
		if ok, _ := path.Match(g, ns); ok {
			return true
		}
	}
	return false
}

func ptrTo[T any](v T) *T { return &v }
