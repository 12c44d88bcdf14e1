package input

import (
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mpiguard/mpiguard/internal/capacity"
)

// The input reaches OPA as the value below, built field by field from the
// document types (document.go, quota.go): exactly the value
// ast.InterfaceToValue gives for them, which is a JSON encode and decode of
// the whole document before the value is built. TestInputValueIsItsJSON
// checks the two agree on randomly filled documents, so a field added to a
// type and not here fails it. New builds each part once per job
// (Document.object assembles them).
//
// Why not ast.InterfaceToValue: its JSON round trip is a large part of a
// decision's CPU, and a burst of creates is CPU-bound (BenchmarkBurstCreate
// measures it).
//
// Types of other packages (pod security results, node selector terms,
// runtime constraints, parameters) still go through ast.InterfaceToValue:
// they are small, and their JSON shape is theirs.

func (r *requestInput) value() *ast.Term {
	return object(
		item("operation", ast.StringTerm(string(r.Operation))),
		item("user", object(
			item("username", ast.StringTerm(r.User.Username)),
			item("groups", stringList(r.User.Groups)),
		)),
		item("dryRun", ast.BooleanTerm(r.DryRun)),
	)
}

func (t *trainJobInput) value() *ast.Term {
	obj := ast.NewObject(
		item("name", ast.StringTerm(t.Name)),
		item("labels", stringMap(t.Labels)),
		item("annotations", stringMap(t.Annotations)),
		item("namespace", ast.StringTerm(t.Namespace)),
		item("suspend", ast.BooleanTerm(t.Suspend)),
		item("activeDeadlineSeconds", ast.InternedTerm(t.ActiveDeadlineSeconds)),
		item("env", listOf(t.Env, (*envInput).value)),
		item("runtimePatchManagers", stringList(t.RuntimePatchManagers)),
		item("mpiguardEntries", listOf(t.MpiguardEntries, (*entryInput).value)),
	)
	if t.NumNodes != nil {
		obj.Insert(fieldName("numNodes"), ast.InternedTerm(int(*t.NumNodes)))
	}
	if t.NumProcPerNode != nil {
		obj.Insert(fieldName("numProcPerNode"), ast.InternedTerm(int(*t.NumProcPerNode)))
	}
	if t.Image != nil {
		obj.Insert(fieldName("image"), ast.StringTerm(*t.Image))
	}
	return ast.NewTerm(obj)
}

func (e *envInput) value() *ast.Term {
	return object(
		item("field", ast.StringTerm(e.Field)),
		item("name", ast.StringTerm(e.Name)),
		item("value", ast.StringTerm(e.Value)),
	)
}

func (e *entryInput) value() *ast.Term {
	return object(
		item("field", ast.StringTerm(e.Field)),
		item("foreignFields", stringList(e.ForeignFields)),
		item("differences", stringList(e.Differences)),
		item("mpiguardWrites", ast.BooleanTerm(e.MpiguardWrites)),
	)
}

func (j *jobInput) value(extern *externs) *ast.Term {
	// Launcher and Workers point into ReplicatedJobs: they share its values.
	rjs := make([]*ast.Term, len(j.ReplicatedJobs))
	for i := range j.ReplicatedJobs {
		rjs[i] = j.ReplicatedJobs[i].value(extern)
	}
	replicatedJob := func(rj *replicatedJobInput) *ast.Term {
		for i := range j.ReplicatedJobs {
			if rj == &j.ReplicatedJobs[i] {
				return rjs[i]
			}
		}
		return rj.value(extern)
	}
	obj := ast.NewObject(
		item("mpi", ast.BooleanTerm(j.MPI)),
		item("mpiImplementation", ast.StringTerm(j.MPIImplementation)),
		item("runLauncherAsNode", ast.BooleanTerm(j.RunLauncherAsNode)),
		item("numNodes", ast.InternedTerm(int(j.NumNodes))),
		item("slotsPerWorker", ast.InternedTerm(int(j.SlotsPerWorker))),
		item("gpusPerWorker", ast.InternedTerm(j.GPUsPerWorker)),
		item("replicatedJobs", arrayOrNull(j.ReplicatedJobs == nil, rjs)),
		item("total", j.Total.value()),
		item("problems", listOf(j.Problems, (*problemInput).value)),
		item("podSecurity", extern.term(j.PodSecurity)),
		item("objects", extern.term(j.Objects)),
	)
	if j.Launcher != nil {
		obj.Insert(fieldName("launcher"), replicatedJob(j.Launcher))
	}
	if j.Workers != nil {
		obj.Insert(fieldName("workers"), replicatedJob(j.Workers))
	}
	return ast.NewTerm(obj)
}

func (rj *replicatedJobInput) value(extern *externs) *ast.Term {
	return object(
		item("name", ast.StringTerm(rj.Name)),
		item("role", ast.StringTerm(string(rj.Role))),
		item("pods", ast.InternedTerm(int(rj.Pods))),
		item("perPod", rj.PerPod.value()),
		item("priorityClassName", ast.StringTerm(rj.PriorityClassName)),
		item("terminating", ast.BooleanTerm(rj.Terminating)),
		item("labels", stringMap(rj.Labels)),
		item("annotations", stringMap(rj.Annotations)),
		item("nodeSelector", stringMap(rj.NodeSelector)),
		item("requiredNodeSelectorTerms", extern.term(rj.RequiredNodeSelectorTerms)),
		item("images", stringMap(rj.Images)),
		item("requested", object(
			item("labels", stringMap(rj.Requested.Labels)),
			item("annotations", stringMap(rj.Requested.Annotations)),
		)),
	)
}

func (c *chargeInput) value() *ast.Term {
	return object(
		item("requests", quantities(c.Requests)),
		item("limits", quantities(c.Limits)),
		item("pods", ast.InternedTerm(c.Pods)),
		item("missingRequests", stringList(c.MissingRequests)),
		item("missingLimits", stringList(c.MissingLimits)),
	)
}

func (q *quantityInput) value() *ast.Term {
	return object(
		item("value", ast.NumberTerm(q.Value)),
		item("milli", ast.NumberTerm(q.Milli)),
		item("display", ast.StringTerm(q.Display)),
	)
}

func (p *problemInput) value() *ast.Term {
	return object(
		item("field", ast.StringTerm(p.Field)),
		item("type", ast.StringTerm(p.Type)),
		item("detail", ast.StringTerm(p.Detail)),
	)
}

func (m *metaInput) value() *ast.Term {
	return object(
		item("name", ast.StringTerm(m.Name)),
		item("labels", stringMap(m.Labels)),
		item("annotations", stringMap(m.Annotations)),
	)
}

func (r *runtimeInput) value(extern *externs) *ast.Term {
	return object(
		item("kind", ast.StringTerm(r.Kind)),
		item("name", ast.StringTerm(r.Name)),
		item("labels", stringMap(r.Labels)),
		item("annotations", stringMap(r.Annotations)),
		item("constraints", extern.term(r.Constraints)),
	)
}

func (q *quotaInput) value() *ast.Term {
	return object(
		item("name", ast.StringTerm(q.Name)),
		item("hard", quantities(q.Hard)),
		item("used", quantities(q.Used)),
		item("reserved", cached(q.reservedTerm, q.Reserved, quantities)),
		item("reservedBy", cached(q.reservedByTerm, q.ReservedBy, stringList[string])),
		item("roles", stringList(q.Roles)),
		item("demand", mapOf(q.Demand, (*demandInput).value)),
	)
}

func (d *demandInput) value() *ast.Term {
	return object(
		item("kind", ast.StringTerm(d.Kind)),
		item("resource", ast.StringTerm(d.Resource)),
		item("milli", ast.NumberTerm(d.Milli)),
		item("display", ast.StringTerm(d.Display)),
		item("hard", ast.NumberTerm(d.Hard)),
		item("hardDisplay", ast.StringTerm(d.HardDisplay)),
		item("used", ast.NumberTerm(d.Used)),
		item("usedDisplay", ast.StringTerm(d.UsedDisplay)),
		item("uncounted", ast.NumberTerm(d.Uncounted)),
		item("uncountedDisplay", ast.StringTerm(d.UncountedDisplay)),
		item("held", ast.NumberTerm(d.Held)),
		item("heldDisplay", ast.StringTerm(d.HeldDisplay)),
		item("heldBy", cached(d.heldByTerm, d.HeldBy, func(l []heldByInput) *ast.Term { return listOf(l, (*heldByInput).value) })),
		item("undeclared", ast.BooleanTerm(d.Undeclared)),
		item("parts", listOf(d.Parts, (*partInput).value)),
	)
}

func (h *heldByInput) value() *ast.Term {
	return object(
		item("trainJob", ast.StringTerm(h.TrainJob)),
		item("milli", ast.NumberTerm(h.Milli)),
		item("display", ast.StringTerm(h.Display)),
	)
}

func (p *partInput) value() *ast.Term {
	return object(
		item("name", ast.StringTerm(p.Name)),
		item("role", ast.StringTerm(string(p.Role))),
		item("pods", ast.InternedTerm(int(p.Pods))),
		item("perPodMilli", ast.NumberTerm(p.PerPodMilli)),
		item("perPodDisplay", ast.StringTerm(p.PerPodDisplay)),
		item("undeclared", ast.BooleanTerm(p.Undeclared)),
	)
}

// externs converts the values of other packages' types with
// ast.InterfaceToValue, keeping the first error.
type externs struct{ err error }

func (x *externs) term(v any) *ast.Term {
	out, err := ast.InterfaceToValue(v)
	if err != nil {
		x.err = err
		return ast.NullTerm()
	}
	return ast.NewTerm(out)
}

// cached is term when QuotaState built it already (it is v as an OPA value),
// else value(v).
func cached[T any](term *ast.Term, v T, value func(T) *ast.Term) *ast.Term {
	if term != nil {
		return term
	}
	return value(v)
}

// withItem is obj (an object) with key's value replaced by value; obj is
// unchanged, its other values shared (inputs are never modified).
func withItem(obj *ast.Term, key string, value *ast.Term) *ast.Term {
	o := obj.Value.(ast.Object)
	k := ast.StringTerm(key)
	items := make([][2]*ast.Term, 0, o.Len()+1)
	o.Foreach(func(key, v *ast.Term) {
		if !key.Equal(k) {
			items = append(items, [2]*ast.Term{key, v})
		}
	})
	return object(append(items, [2]*ast.Term{k, value})...)
}

// item is a field of the document: key is one of the field names written
// in this package, never a name from the input (a label, a resource), so
// their terms are made once and shared (an evaluation never changes a term
// of its input).
func item(key string, value *ast.Term) [2]*ast.Term {
	return ast.Item(fieldName(key), value)
}

// fieldNames holds the term of each field name item has been given.
var fieldNames sync.Map // string -> *ast.Term

func fieldName(key string) *ast.Term {
	if t, ok := fieldNames.Load(key); ok {
		return t.(*ast.Term)
	}
	t, _ := fieldNames.LoadOrStore(key, ast.StringTerm(key))
	return t.(*ast.Term)
}

// entry is an entry of a map of the input (labels, resources): its key is
// the input's.
func entry(key string, value *ast.Term) [2]*ast.Term {
	return ast.Item(ast.StringTerm(key), value)
}

func object(items ...[2]*ast.Term) *ast.Term { return ast.NewTerm(ast.NewObject(items...)) }

// The helpers below give null for a nil map or list, as JSON does; the input
// builders never leave one nil.

func stringMap[S ~string](m map[string]S) *ast.Term {
	if m == nil {
		return ast.NullTerm()
	}
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, entry(k, ast.StringTerm(string(v))))
	}
	return object(items...)
}

func stringList[S ~string](l []S) *ast.Term {
	terms := make([]*ast.Term, len(l))
	for i, s := range l {
		terms[i] = ast.StringTerm(string(s))
	}
	return arrayOrNull(l == nil, terms)
}

func listOf[T any](l []T, value func(*T) *ast.Term) *ast.Term {
	terms := make([]*ast.Term, len(l))
	for i := range l {
		terms[i] = value(&l[i])
	}
	return arrayOrNull(l == nil, terms)
}

func mapOf[T any](m map[string]T, value func(*T) *ast.Term) *ast.Term {
	if m == nil {
		return ast.NullTerm()
	}
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, entry(k, value(&v)))
	}
	return object(items...)
}

func quantities(m map[string]quantityInput) *ast.Term { return mapOf(m, (*quantityInput).value) }

func arrayOrNull(isNil bool, terms []*ast.Term) *ast.Term {
	if isNil {
		return ast.NullTerm()
	}
	return ast.ArrayTerm(terms...)
}

// capacityValue is input.capacity (capacity.Input): built here rather than
// through ast.InterfaceToValue, as the rest of the document, since every
// decision in a cluster with Nodes builds one.
func capacityValue(in *capacity.Input) *ast.Term {
	obj := ast.NewObject(
		item("nodes", ast.InternedTerm(in.Nodes)),
		item("shapes", ast.InternedTerm(in.Shapes)),
		item("replicatedJobs", listOf(in.ReplicatedJobs, capacityReplicatedJobValue)),
	)
	if in.Gang != nil {
		obj.Insert(fieldName("gang"), capacityGangValue(in.Gang))
	}
	return ast.NewTerm(obj)
}

func capacityReplicatedJobValue(rj *capacity.ReplicatedJob) *ast.Term {
	return object(
		item("name", ast.StringTerm(rj.Name)),
		item("role", ast.StringTerm(string(rj.Role))),
		item("pods", ast.InternedTerm(int(rj.Pods))),
		item("requests", stringMap(rj.Requests)),
		item("eligibleNodes", ast.InternedTerm(rj.EligibleNodes)),
		item("excluded", object(
			item("selector", ast.InternedTerm(rj.Excluded.Selector)),
			item("taints", ast.InternedTerm(rj.Excluded.Taints)),
			item("unschedulable", ast.InternedTerm(rj.Excluded.Unschedulable)),
		)),
		item("fittingNodes", ast.InternedTerm(rj.FittingNodes)),
		item("short", listOf(rj.Short, func(s *capacity.Shortfall) *ast.Term {
			return object(
				item("resource", ast.StringTerm(s.Resource)),
				item("asks", ast.StringTerm(s.Asks)),
				item("largest", ast.StringTerm(s.Largest)),
			)
		})),
	)
}

func capacityGangValue(g *capacity.Gang) *ast.Term {
	return object(
		item("workers", ast.InternedTerm(int(g.Workers))),
		item("launcher", ast.BooleanTerm(g.Launcher)),
		item("capacity", ast.InternedTerm(g.Capacity)),
		item("shapes", listOf(g.Shapes, func(s *capacity.GangShape) *ast.Term {
			obj := ast.NewObject(
				item("nodes", ast.InternedTerm(s.Nodes)),
				item("labels", shapeLabels(s)),
				item("workersPerNode", ast.InternedTerm(s.WorkersPerNode)),
			)
			if s.LauncherCost != nil {
				obj.Insert(fieldName("launcherCost"), ast.InternedTerm(*s.LauncherCost))
			}
			return ast.NewTerm(obj)
		})),
	)
}

// shapeLabelsCache keeps the labels of the node shapes decisions have read
// as OPA values, by shape: a Summary's shapes never change and every
// decision on a gang reads every shape's labels. It is emptied when it
// holds more than shapeLabelsCacheSize, so shapes of summaries made before
// the nodes last changed do not stay.
var shapeLabelsCache struct {
	sync.Map // *capacity.Shape -> *ast.Term
	size     atomic.Int64
}

const shapeLabelsCacheSize = 4096

// shapeLabels is s.Labels as an OPA value; an OPA value is never changed
// by an evaluation, so one value serves every decision.
func shapeLabels(s *capacity.GangShape) *ast.Term {
	if s.Shape == nil { // a GangShape built by hand
		return stringMap(s.Labels)
	}
	if t, ok := shapeLabelsCache.Load(s.Shape); ok {
		return t.(*ast.Term)
	}
	t := stringMap(s.Shape.Labels)
	if _, loaded := shapeLabelsCache.LoadOrStore(s.Shape, t); !loaded && shapeLabelsCache.size.Add(1) > shapeLabelsCacheSize {
		shapeLabelsCache.Clear()
		shapeLabelsCache.size.Store(0)
	}
	return t
}
