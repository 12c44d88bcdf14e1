package engine

import (
	"encoding/json"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/render"
)

// Keys of input.quotas[].demand entries besides those shared with the rest of the input.
var (
	kFree, kFreeDisplay          = ast.StringTerm("free"), ast.StringTerm("freeDisplay")
	kHardDisplay, kUsedDisplay   = ast.StringTerm("hardDisplay"), ast.StringTerm("usedDisplay")
	kHeld, kHeldDisplay, kHeldBy = ast.StringTerm("held"), ast.StringTerm("heldDisplay"), ast.StringTerm("heldBy")
	kPerPodDisplay               = ast.StringTerm("perPodDisplay")
)

var (
	big1000 = big.NewInt(1000)
	// binarySuffixes are kubectl's suffixes for 1024^i bytes.
	binarySuffixes = [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)

// quotasTerm builds input.quotas: for each ResourceQuota its hard limits, its
// status.used, what admitted jobs whose pods do not exist yet hold of it, which
// of this job's replicated jobs the quota's scopes select (quota.roles), and
// what this job demands of it per quota resource name.
//
// The terms are built per request, not cached: what they depend on (status.used,
// the jobs holding the quota) changes with every admission in the namespace,
// and amounts are exact big integers, which an int64-keyed cache conflated.
func quotasTerm(req *Request) *ast.Term {
	if len(req.Quotas) == 0 {
		return emptyArray
	}
	usage := perPodUsage(req.View)
	out := make([]*ast.Term, len(req.Quotas))
	for i := range req.Quotas {
		out[i] = quotaTerm(&req.Quotas[i], req.View, req.Reserved, usage)
	}
	return ast.ArrayTerm(out...)
}

// quotaTerm is one quota's entry of input.quotas.
func quotaTerm(q *corev1.ResourceQuota, v *render.JobView, holders []Reservation, usage []corev1.ResourceList) *ast.Term {
	held, by := reservedFor(q, holders)
	selected := make([]bool, len(v.ReplicatedJobs))
	roles := make([]*ast.Term, 0, len(v.ReplicatedJobs))
	for j := range v.ReplicatedJobs {
		selected[j] = quota.Selects(q, &v.ReplicatedJobs[j].PodTemplate.Spec)
		if selected[j] {
			roles = append(roles, vocabularyTerm(v.ReplicatedJobs[j].Name))
		}
	}
	return ast.ObjectTerm(
		item(kName, vocabularyTerm(q.Name)),
		item(kHard, resourcesTerm(q.Spec.Hard)),
		item(kUsed, resourcesTerm(q.Status.Used)),
		item(kReserved, resourcesTerm(heldTotals(held))),
		item(kReservedBy, stringsTerm(by)),
		item(kRoles, ast.ArrayTerm(roles...)),
		item(kDemand, demandTerm(q, v, usage, selected, held)),
	)
}

// demandTerm is the demand object: per quota resource name pods are charged
// for, what this job charges (milli: the total, parts: per selected
// replicated job), what the quota has free for it (hard - used - held: the
// quota's own arithmetic, done once here so Rego compares two integers), and
// what admitted jobs hold of it, by job. Every amount is exact and comes with
// its display, so messages are right at any size.
func demandTerm(q *corev1.ResourceQuota, v *render.JobView, usage []corev1.ResourceList, selected []bool, held map[corev1.ResourceName]*quota.Held) *ast.Term {
	names := make([]corev1.ResourceName, 0, len(q.Spec.Hard))
	for name := range q.Spec.Hard {
		if _, _, ok := quota.ChargedName(name); ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return emptyObject
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int { return strings.Compare(string(a), string(b)) })
	items := make([][2]*ast.Term, len(names))
	for i, name := range names {
		items[i] = item(vocabularyTerm(string(name)), demandEntryTerm(q, name, v, usage, selected, held[name]))
	}
	return ast.ObjectTerm(items...)
}

// demandEntryTerm is demand[name]: this job's total and parts, and the
// quota's hard, used, held and free amounts of name.
func demandEntryTerm(q *corev1.ResourceQuota, name corev1.ResourceName, v *render.JobView, usage []corev1.ResourceList, selected []bool, held *quota.Held) *ast.Term {
	kind, res, _ := quota.ChargedName(name)
	parts, total, undeclaredAny := demandPartsTerm(name, kind, res, v, usage, selected)
	free := quota.Milli(quota.Free(q, name, held))
	hard, used := quota.Milli(q.Spec.Hard[name]), quota.Milli(q.Status.Used[name])
	heldMilli, heldBy := new(big.Int), emptyArray
	if held != nil {
		heldMilli = quota.Milli(held.Total)
		heldBy = heldByTerm(res, held.By)
	}
	return ast.ObjectTerm(
		item(kKind, stringTerm(kind)),
		item(kResource, vocabularyTerm(res)),
		item(kMilli, bigTerm(total)),
		item(kDisplay, ast.StringTerm(displayMilli(res, total))),
		item(kFree, bigTerm(free)),
		item(kFreeDisplay, ast.StringTerm(displayMilli(res, free))),
		item(kHardDisplay, ast.StringTerm(displayMilli(res, hard))),
		item(kUsedDisplay, ast.StringTerm(displayMilli(res, used))),
		item(kHeld, bigTerm(heldMilli)),
		item(kHeldDisplay, ast.StringTerm(displayMilli(res, heldMilli))),
		item(kHeldBy, heldBy),
		item(kUndeclared, boolTerm(undeclaredAny)),
		item(kParts, parts),
	)
}

// demandPartsTerm is what each selected replicated job charges for quota resource
// name (pods, per pod, whether a container leaves it undeclared), the job's
// total, and whether any part leaves it undeclared.
func demandPartsTerm(name corev1.ResourceName, kind, res string, v *render.JobView, usage []corev1.ResourceList, selected []bool) (*ast.Term, *big.Int, bool) {
	total := new(big.Int)
	undeclaredAny := false
	parts := make([]*ast.Term, 0, len(v.ReplicatedJobs))
	for j := range v.ReplicatedJobs {
		if !selected[j] {
			continue
		}
		rj := &v.ReplicatedJobs[j]
		// The per-pod amount is rounded to milli units as MilliValue rounds,
		// and the total is the sum of pods × that, so the breakdown in a
		// message adds up to the total it explains.
		per := quota.Milli(usage[j][name])
		total.Add(total, new(big.Int).Mul(per, big.NewInt(int64(rj.Pods))))
		undeclared := undeclared(kind, res, &rj.PerPod)
		undeclaredAny = undeclaredAny || undeclared
		parts = append(parts, ast.ObjectTerm(
			item(kName, vocabularyTerm(rj.Name)),
			item(kRole, stringTerm(string(rj.Role))),
			item(kPods, intTerm(rj.Pods)),
			item(kPerPodMilli, bigTerm(per)),
			item(kPerPodDisplay, ast.StringTerm(displayMilli(res, per))),
			item(kUndeclared, boolTerm(undeclared)),
		))
	}
	return ast.ArrayTerm(parts...), total, undeclaredAny
}

// heldByTerm lists the jobs holding a quota resource, largest amount first:
// the policy names them when they are why a job does not fit.
func heldByTerm(res string, by []quota.HeldBy) *ast.Term {
	out := make([]*ast.Term, len(by))
	for i, h := range by {
		m := quota.Milli(h.Amount)
		out[i] = ast.ObjectTerm(
			item(kTrainJob, ast.StringTerm(h.TrainJob)),
			item(kMilli, bigTerm(m)),
			item(kDisplay, ast.StringTerm(displayMilli(res, m))),
		)
	}
	return ast.ArrayTerm(out...)
}

func undeclared(kind, res string, c *render.Charge) bool {
	var missing []corev1.ResourceName
	switch kind {
	case quota.KindRequests:
		missing = c.MissingRequests
	case quota.KindLimits:
		missing = c.MissingLimits
	}
	return slices.Contains(missing, corev1.ResourceName(res))
}

// reservedFor is what holders hold of quota q per resource name, and the
// holders that hold any of it, in the order given (input.quotas[].reservedBy).
func reservedFor(q *corev1.ResourceQuota, holders []Reservation) (map[corev1.ResourceName]*quota.Held, []string) {
	held := quota.Reserved(q, holders)
	if len(held) == 0 {
		return held, nil
	}
	holding := map[string]bool{}
	for _, h := range held {
		for _, b := range h.By {
			holding[b.TrainJob] = true
		}
	}
	var by []string
	for _, h := range holders {
		if holding[h.TrainJob] {
			by = append(by, h.TrainJob)
			delete(holding, h.TrainJob) // a job listed twice is named once
		}
	}
	return held, by
}

// heldTotals is what is held of each quota resource name (input.quotas[].reserved).
func heldTotals(held map[corev1.ResourceName]*quota.Held) corev1.ResourceList {
	if len(held) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(held))
	for name, h := range held {
		out[name] = h.Total
	}
	return out
}

// freeMilli is what quota q has free for name in milli units, exactly: hard -
// status.used - held (negative when over-committed); false when q does not
// limit name.
func freeMilli(q *corev1.ResourceQuota, name corev1.ResourceName, held map[corev1.ResourceName]*quota.Held) (*big.Int, bool) {
	_, limited := q.Spec.Hard[name]
	return quota.Milli(quota.Free(q, name, held[name])), limited
}

// perPodUsage is the quota usage of one pod of each replicated job of v.
func perPodUsage(v *render.JobView) []corev1.ResourceList {
	out := make([]corev1.ResourceList, len(v.ReplicatedJobs))
	for j := range v.ReplicatedJobs {
		out[j] = v.ReplicatedJobs[j].PerPod.QuotaUsage()
	}
	return out
}

func stringsTerm(ss []string) *ast.Term {
	if len(ss) == 0 {
		return emptyArray
	}
	out := make([]*ast.Term, len(ss))
	for i, s := range ss {
		out[i] = ast.StringTerm(s)
	}
	return ast.ArrayTerm(out...)
}

// bigTerm is x as a number term: shared for small x, exact at any size.
func bigTerm(x *big.Int) *ast.Term {
	if x.IsInt64() {
		return int64Term(x.Int64())
	}
	return ast.NumberTerm(json.Number(x.String()))
}

// displayMilli shows a milli amount of resource res the way the policies'
// lib.display does (and kubectl prints a canonical quantity), exactly at any
// size: 0 for none or less (an over-committed quota has nothing free), 1500m
// for a fraction, bytes with the largest binary suffix that divides them (up
// to Ei: 16Pi, 7936Mi, 1000000000), other whole amounts plainly (4, 1000:
// counts and cores, never 1k).
func displayMilli(res string, m *big.Int) string {
	if m.Sign() <= 0 {
		return "0"
	}
	if m.IsInt64() {
		return displayMilli64(res, m.Int64()) // most amounts: no big.Int arithmetic
	}
	units, frac := new(big.Int).QuoRem(m, big1000, new(big.Int))
	if frac.Sign() != 0 {
		return m.String() + "m"
	}
	if !countedInBytes(res) {
		return units.String()
	}
	shift := min(units.TrailingZeroBits()/10, uint(len(binarySuffixes)-1))
	return units.Rsh(units, 10*shift).String() + binarySuffixes[shift]
}

// displayMilli64 is displayMilli of a positive int64 amount.
func displayMilli64(res string, m int64) string {
	if m%1000 != 0 {
		return strconv.FormatInt(m, 10) + "m"
	}
	units := m / 1000
	if !countedInBytes(res) {
		return strconv.FormatInt(units, 10)
	}
	shift := min(bits.TrailingZeros64(uint64(units))/10, len(binarySuffixes)-1)
	return strconv.FormatInt(units>>(10*shift), 10) + binarySuffixes[shift]
}

// countedInBytes says whether a resource is an amount of bytes (lib.memory_like).
func countedInBytes(res string) bool {
	switch res {
	case "memory", "ephemeral-storage", "storage":
		return true
	}
	return strings.HasPrefix(res, "hugepages-")
}
