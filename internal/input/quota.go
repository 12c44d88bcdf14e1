package input

import (
	"encoding/json"
	"math/big"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// quotaInput is one ResourceQuota of the namespace in input.quotas. Go
// supplies what must mean the same for this job and for the reserved jobs
// (internal/quota): exact amounts, which replicated jobs the quota's scopes
// select (Roles), and what each quota resource name charges (Demand). The
// aggregate-quota policy compares (hard - used - held) itself.
type quotaInput struct {
	Name       string                   `json:"name"`
	Hard       map[string]quantityInput `json:"hard"`
	Used       map[string]quantityInput `json:"used"`     // status.used
	Reserved   map[string]quantityInput `json:"reserved"` // held by admitted jobs without pods and in-flight submits
	ReservedBy []string                 `json:"reservedBy"`
	Roles      []string                 `json:"roles"`
	Demand     map[string]demandInput   `json:"demand"` // per quota resource name pods are charged for
	// reservedTerm and reservedByTerm are Reserved and ReservedBy as OPA
	// values, shared by every job judged against the same QuotaState.
	reservedTerm, reservedByTerm *ast.Term
}

// demandInput is input.quotas[].demand[name]: what this job charges (Milli,
// per selected replicated job in Parts) and the quota's hard limit, status.used
// and what reserved jobs hold (HeldBy: largest first). Every amount is an exact
// integer of milli units, with its display.
type demandInput struct {
	Kind        string      `json:"kind"`
	Resource    string      `json:"resource"`
	Milli       json.Number `json:"milli"`
	Display     string      `json:"display"`
	Hard        json.Number `json:"hard"`
	HardDisplay string      `json:"hardDisplay"`
	Used        json.Number `json:"used"`
	UsedDisplay string      `json:"usedDisplay"`
	// Uncounted is what of Used are pods the quota's controller had not
	// counted in its status.used (Source.Uncounted), usually 0.
	Uncounted        json.Number   `json:"uncounted"`
	UncountedDisplay string        `json:"uncountedDisplay"`
	Held             json.Number   `json:"held"`
	HeldDisplay      string        `json:"heldDisplay"`
	HeldBy           []heldByInput `json:"heldBy"`
	Undeclared       bool          `json:"undeclared"` // some part leaves the resource undeclared
	Parts            []partInput   `json:"parts"`
	heldByTerm       *ast.Term     // HeldBy as an OPA value, shared like quotaInput's
}

type heldByInput struct {
	TrainJob string      `json:"trainJob"`
	Milli    json.Number `json:"milli"`
	Display  string      `json:"display"`
}

type partInput struct {
	Name          string      `json:"name"`
	Role          render.Role `json:"role"`
	Pods          int32       `json:"pods"`
	PerPodMilli   json.Number `json:"perPodMilli"`
	PerPodDisplay string      `json:"perPodDisplay"`
	Undeclared    bool        `json:"undeclared"`
}

// quotasOf builds input.quotas of src's job, the quotas reserved as state
// says (built from src.Quotas and src.Reservations). It is built per quota state
// (New, Document.Against): status.used and the jobs holding a quota
// change with every admission in the namespace. A job whose pods another
// cluster runs (render.JobView.RunsElsewhere: Kueue's MultiKueue) is charged
// nothing here, so no quota of this namespace limits it: the quota of the
// cluster that runs it does, judged there.
func quotasOf(src *Source, state *QuotaState) []quotaInput {
	v := src.View
	if v.RunsElsewhere {
		return []quotaInput{}
	}
	usage := make([]corev1.ResourceList, len(v.ReplicatedJobs)) // one pod of each replicated job
	for j := range v.ReplicatedJobs {
		usage[j] = v.ReplicatedJobs[j].PerPod.QuotaUsage()
	}
	out := make([]quotaInput, len(src.Quotas))
	for i := range src.Quotas {
		q, held := &src.Quotas[i], state.quota(i)
		selected := make([]bool, len(v.ReplicatedJobs))
		roles := []string{}
		for j := range v.ReplicatedJobs {
			if selected[j] = quota.SelectsScope(q, quota.ScopeOfReplicatedJob(&v.ReplicatedJobs[j])); selected[j] {
				roles = append(roles, v.ReplicatedJobs[j].Name)
			}
		}
		demand := map[string]demandInput{}
		for name, part := range held.names {
			demand[string(name)] = demandOf(q, name, v, usage, selected, part, state.Uncounted[q.Name][name])
		}
		out[i] = quotaInput{
			Name: q.Name, Hard: resourcesOf(q.Spec.Hard), Used: resourcesOf(q.Status.Used),
			Reserved: held.reserved, ReservedBy: held.reservedBy, Roles: roles, Demand: demand,
			reservedTerm: held.reservedTerm, reservedByTerm: held.reservedByTerm,
		}
	}
	return out
}

// demandOf is demand[name]: this job's total and parts, the quota's hard and
// used amounts of name (uncounted of it not counted by the quota's
// controller), and what the reservations hold of it (held).
func demandOf(q *corev1.ResourceQuota, name corev1.ResourceName, v *render.JobView, usage []corev1.ResourceList, selected []bool, held *heldPart, uncounted resource.Quantity) demandInput {
	kind, res, _ := quota.ChargedName(name)
	hard, used, missed := quota.Milli(q.Spec.Hard[name]), quota.Milli(q.Status.Used[name]), quota.Milli(uncounted)
	d := demandInput{
		Kind: kind, Resource: res,
		Hard: number(hard), HardDisplay: quota.Display(res, hard),
		Used: number(used), UsedDisplay: quota.Display(res, used),
		Uncounted: number(missed), UncountedDisplay: quota.Display(res, missed),
		Held: held.held, HeldDisplay: held.display, HeldBy: held.by, heldByTerm: held.byTerm,
		Parts: []partInput{},
	}
	total := new(big.Int)
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
		missing := rj.PerPod.MissingRequests
		if kind == quota.KindLimits {
			missing = rj.PerPod.MissingLimits
		}
		undeclared := kind != quota.KindPods && slices.Contains(missing, corev1.ResourceName(res))
		d.Undeclared = d.Undeclared || undeclared
		d.Parts = append(d.Parts, partInput{
			Name: rj.Name, Role: rj.Role, Pods: rj.Pods,
			PerPodMilli: number(per), PerPodDisplay: quota.Display(res, per), Undeclared: undeclared,
		})
	}
	d.Milli, d.Display = number(total), quota.Display(res, total)
	return d
}
