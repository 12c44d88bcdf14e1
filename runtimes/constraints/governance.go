package constraints

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Governance annotations: the priority a runtime's jobs run at and how their
// gangs are scheduled.
//
//	mpiguard.io/allowed-priority-classes: "ml-low,ml-high"   priority class names the runtime's
//	                                                          jobs may use: the TrainJob's Kueue
//	                                                          label kueue.x-k8s.io/priority-class
//	                                                          and its pods' priorityClassName
//	mpiguard.io/default-priority-class: "ml-low"             what a job that names none is told
//	                                                          to name (one of the allowed)
//	mpiguard.io/gang-schedule-timeout-seconds: "60-600"      a coscheduling gang's
//	                                                          scheduleTimeoutSeconds must be set
//	                                                          and in this range ("N", "MIN-",
//	                                                          "-MAX" too)
//	mpiguard.io/gang-min-available: "all"                    the job must be gang-scheduled
//	                                                          (Volcano or coscheduling) with at
//	                                                          least this many pods in its gang
//	                                                          (minMember); "all": every pod
const (
	AnnotationAllowedPriorityClasses     = "mpiguard.io/allowed-priority-classes"
	AnnotationDefaultPriorityClass       = "mpiguard.io/default-priority-class"
	AnnotationGangScheduleTimeoutSeconds = "mpiguard.io/gang-schedule-timeout-seconds"
	AnnotationGangMinAvailable           = "mpiguard.io/gang-min-available"
)

// PriorityClassLabel is the TrainJob label Kueue reads the job's
// WorkloadPriorityClass from.
const PriorityClassLabel = "kueue.x-k8s.io/priority-class"

// Range is an inclusive range of seconds; a nil bound is open.
type Range struct {
	Min *int32 `json:"min,omitempty"`
	Max *int32 `json:"max,omitempty"`
}

// MinAvailableAll is the gang-min-available value that asks for every pod.
const MinAvailableAll = "all"

// parseGovernance reads the governance annotations into c, appending the
// malformed ones to errs.
func parseGovernance(annotations map[string]string, c *Constraints, errs field.ErrorList) field.ErrorList {
	if v, ok := annotations[AnnotationAllowedPriorityClasses]; ok {
		p := annotationsPath.Key(AnnotationAllowedPriorityClasses)
		for _, name := range splitList(v) {
			if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
				errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%q is not a priority class name (%s); write comma-separated names, e.g. \"ml-low,ml-high\"", name, strings.Join(msgs, "; "))))
				continue
			}
			c.AllowedPriorityClasses = append(c.AllowedPriorityClasses, name)
		}
		if len(c.AllowedPriorityClasses) == 0 {
			errs = append(errs, field.Invalid(p, v, "lists no priority class; write comma-separated names (e.g. \"ml-low,ml-high\"), or remove the annotation"))
		}
	}
	if v, ok := annotations[AnnotationDefaultPriorityClass]; ok {
		p := annotationsPath.Key(AnnotationDefaultPriorityClass)
		name := strings.TrimSpace(v)
		switch {
		case len(validation.IsDNS1123Subdomain(name)) > 0:
			errs = append(errs, field.Invalid(p, v, "must be a priority class name, e.g. \"ml-low\""))
		case len(c.AllowedPriorityClasses) > 0 && !slices.Contains(c.AllowedPriorityClasses, name):
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("is not one of %s (%s): the default must be allowed", AnnotationAllowedPriorityClasses, strings.Join(c.AllowedPriorityClasses, ", "))))
		default:
			c.DefaultPriorityClass = name
		}
	}
	if v, ok := annotations[AnnotationGangScheduleTimeoutSeconds]; ok {
		r, err := parseRange(v)
		if err != "" {
			errs = append(errs, field.Invalid(annotationsPath.Key(AnnotationGangScheduleTimeoutSeconds), v, err))
		} else {
			c.GangScheduleTimeoutSeconds = r
		}
	}
	if v, ok := annotations[AnnotationGangMinAvailable]; ok {
		s := strings.TrimSpace(v)
		n, err := strconv.ParseInt(s, 10, 32)
		switch {
		case s == MinAvailableAll:
			c.GangMinAvailable = MinAvailableAll
		case err != nil || n < 1:
			errs = append(errs, field.Invalid(annotationsPath.Key(AnnotationGangMinAvailable), v,
				"must be \"all\" (every pod of the job in one gang) or a whole number of pods, at least 1 (e.g. \"4\")"))
		default:
			c.GangMinAvailable = strconv.FormatInt(n, 10)
		}
	}
	return errs
}

// parseRange reads "N", "MIN-MAX", "MIN-" or "-MAX" (whole seconds, at
// least 1); the error says what a valid value looks like.
func parseRange(v string) (*Range, string) {
	const want = "must be whole seconds, at least 1: \"N\", \"MIN-MAX\", \"MIN-\" or \"-MAX\" (e.g. \"60-600\")"
	bound := func(s string) (*int32, bool) {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, true
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 1 || n > math.MaxInt32 {
			return nil, false
		}
		return ptrTo(int32(n)), true
	}
	lo, hi, isRange := strings.Cut(v, "-")
	if !isRange {
		hi = lo
	}
	minB, okMin := bound(lo)
	maxB, okMax := bound(hi)
	switch {
	case !okMin || !okMax || (minB == nil && maxB == nil):
		return nil, want
	case minB != nil && maxB != nil && *minB > *maxB:
		return nil, fmt.Sprintf("the minimum %d is above the maximum %d; %s", *minB, *maxB, want)
	}
	return &Range{Min: minB, Max: maxB}, ""
}

// governanceInput adds the governance constraints to a PolicyInput map.
func governanceInput(c Constraints, out map[string]any) {
	if len(c.AllowedPriorityClasses) > 0 {
		names := make([]any, len(c.AllowedPriorityClasses))
		for i, n := range c.AllowedPriorityClasses {
			names[i] = n
		}
		out["allowedPriorityClasses"] = names
	}
	if c.DefaultPriorityClass != "" {
		out["defaultPriorityClass"] = c.DefaultPriorityClass
	}
	if r := c.GangScheduleTimeoutSeconds; r != nil {
		m := map[string]any{}
		if r.Min != nil {
			m["min"] = int64(*r.Min)
		}
		if r.Max != nil {
			m["max"] = int64(*r.Max)
		}
		out["gangScheduleTimeoutSeconds"] = m
	}
	switch c.GangMinAvailable {
	case "":
	case MinAvailableAll:
		out["gangMinAvailable"] = MinAvailableAll
	default:
		n, _ := strconv.ParseInt(c.GangMinAvailable, 10, 32)
		out["gangMinAvailable"] = n
	}
}
