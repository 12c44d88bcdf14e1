package quota

import (
	"encoding/json"
	"math/big"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/mpiguard/mpiguard/internal/render"
)

// ObjectsInput is input.job.objects (docs/policies.md): what the Trainer and
// the JobSet controller create for the job besides pods, and, per unscoped
// ResourceQuota and name that counts such objects, what the job needs of it
// against what the quota has. Go supplies the facts, as it does for pods'
// quota (the names' mapping, exact amounts, what admitted jobs hold); the
// object-quota policy compares them and words the denial.
type ObjectsInput struct {
	Created []CreatedInput     `json:"created"`
	Quotas  []ObjectQuotaInput `json:"quotas"`
}

// CreatedInput is one kind of object one creator makes for the job.
type CreatedInput struct {
	Kind          string   `json:"kind"`          // ConfigMap, Job, JobSet, ...
	Group         string   `json:"group"`         // "" for the core group
	Resource      string   `json:"resource"`      // configmaps, jobs.batch, jobsets.jobset.x-k8s.io
	QuotaName     string   `json:"quotaName"`     // count/configmaps, count/jobs.batch, ...
	Creator       string   `json:"creator"`       // Trainer | JobSet
	ReplicatedJob string   `json:"replicatedJob"` // the replicated job whose Jobs these are; "" otherwise
	Names         []string `json:"names"`
	Count         int32    `json:"count"`    // how many the job creates
	Existing      int32    `json:"existing"` // how many exist already: not created again, in status.used
	Charged       int32    `json:"charged"`  // count - existing
}

// ObjectQuotaInput is one name of one quota that counts objects the job creates.
type ObjectQuotaInput struct {
	Quota       string          `json:"quota"`  // the ResourceQuota
	Name        string          `json:"name"`   // as the quota writes it: configmaps or count/configmaps
	Counts      string          `json:"counts"` // the count/ name it counts by
	Milli       json.Number     `json:"milli"`  // what this job charges, milli units
	Display     string          `json:"display"`
	Hard        json.Number     `json:"hard"`
	HardDisplay string          `json:"hardDisplay"`
	Used        json.Number     `json:"used"` // status.used
	UsedDisplay string          `json:"usedDisplay"`
	Held        json.Number     `json:"held"` // what admitted jobs whose objects do not exist yet hold
	HeldDisplay string          `json:"heldDisplay"`
	HeldBy      []ObjectsHeldBy `json:"heldBy"`
	// Created lists the entries of created it counts (indexes into created).
	Created []int `json:"created"`
}

// ObjectsHeldBy is what one admitted job holds of a quota name.
type ObjectsHeldBy struct {
	TrainJob string      `json:"trainJob"`
	Milli    json.Number `json:"milli"`
	Display  string      `json:"display"`
}

// ObjectsInputOf builds input.job.objects for a job rendered as view, judged
// against quotas of which admitted jobs hold held[i] of quotas[i] (Reserved:
// what their missing objects count).
func ObjectsInputOf(view *render.JobView, quotas []corev1.ResourceQuota, held []map[corev1.ResourceName]*Reserved) ObjectsInput {
	in := ObjectsInput{Created: make([]CreatedInput, 0, len(view.Objects))}
	for i := range view.Objects {
		o := &view.Objects[i]
		in.Created = append(in.Created, CreatedInput{
			Kind: o.GVK.Kind, Group: o.GVK.Group, Resource: o.GroupResource().String(), QuotaName: string(ObjectCountName(o.GroupResource())),
			Creator: o.Creator, ReplicatedJob: o.ReplicatedJob, Names: append([]string{}, o.Names...),
			Count: o.Count, Existing: o.Existing, Charged: o.Missing(),
		})
	}
	in.Quotas = ObjectQuotasOf(view, in.Created, quotas, held)
	return in
}

// ObjectQuotasOf is input.job.objects.quotas of a job rendered as view whose
// input.job.objects.created is created, judged against quotas as
// ObjectsInputOf is: the part a new quota state changes
// (input.Document.Against builds only it again).
func ObjectQuotasOf(view *render.JobView, created []CreatedInput, quotas []corev1.ResourceQuota, held []map[corev1.ResourceName]*Reserved) []ObjectQuotaInput {
	out := []ObjectQuotaInput{}
	if view.RunsElsewhere {
		return out // its objects are created on the cluster that runs it
	}
	for i := range quotas {
		q := &quotas[i]
		if !Unscoped(q) {
			continue
		}
		var names []corev1.ResourceName
		for name := range q.Spec.Hard {
			if _, ok := ObjectCounted(name); ok {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			continue
		}
		slices.Sort(names)
		for _, name := range names {
			out = append(out, objectQuotaInput(q, name, created, held[i][name]))
		}
	}
	return out
}

func objectQuotaInput(q *corev1.ResourceQuota, name corev1.ResourceName, created []CreatedInput, held *Reserved) ObjectQuotaInput {
	counts, _ := ObjectCounted(name)
	hard, used, heldMilli := Milli(q.Spec.Hard[name]), Milli(q.Status.Used[name]), new(big.Int)
	out := ObjectQuotaInput{
		Quota: q.Name, Name: string(name), Counts: string(counts),
		Hard: jsonNumber(hard), HardDisplay: Display("", hard), Used: jsonNumber(used), UsedDisplay: Display("", used),
		HeldBy: []ObjectsHeldBy{}, Created: []int{},
	}
	if held != nil {
		heldMilli = Milli(held.Total)
		for _, h := range held.By {
			m := Milli(h.Amount)
			out.HeldBy = append(out.HeldBy, ObjectsHeldBy{TrainJob: h.TrainJob, Milli: jsonNumber(m), Display: Display("", m)})
		}
	}
	out.Held, out.HeldDisplay = jsonNumber(heldMilli), Display("", heldMilli)
	var total int64
	for i := range created {
		if created[i].QuotaName == string(counts) {
			out.Created = append(out.Created, i)
			total += int64(created[i].Charged)
		}
	}
	m := big.NewInt(total * 1000)
	out.Milli, out.Display = jsonNumber(m), Display("", m)
	return out
}

func jsonNumber(m *big.Int) json.Number { return json.Number(m.String()) }
