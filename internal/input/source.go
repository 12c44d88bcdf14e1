package input

import (
	"errors"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"

	"github.com/mpiguard/mpiguard/internal/capacity"
	"github.com/mpiguard/mpiguard/internal/gang"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// Operation is the admission operation being decided.
type Operation string

// The admission operations a document is built for.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
)

// Source is everything the input document of one job is built from. New
// copies it; the objects it points to are read, never modified, and must
// not change while the Document is in use.
type Source struct {
	Operation Operation
	// User and Groups identify who submitted (for the decision log and policies).
	User   string
	Groups []string
	DryRun bool

	// TrainJob is the submitted object; OldTrainJob the stored one on UPDATE.
	TrainJob    *trainer.TrainJob
	OldTrainJob *trainer.TrainJob
	// View is what TrainJob renders to with its runtime (internal/render).
	View *render.JobView

	// Namespace is the TrainJob's namespace (labels and annotations matter).
	Namespace *corev1.Namespace
	// Quotas are the namespace's ResourceQuotas; their status.used is honoured.
	Quotas []corev1.ResourceQuota
	// Uncounted is what of Quotas' status.used are pods their controller had
	// not counted (nil: none); shown, not added again.
	Uncounted Uncounted
	// Reservations are what quotas do not count yet but will: TrainJobs
	// admitted whose pods do not exist yet, and submits being admitted right
	// now. They are added to each quota's status.used. Do not include
	// TrainJob itself.
	Reservations []quota.Reservation

	// Runtime is the metadata of the (Cluster)TrainingRuntime the job uses, so
	// policies can key on runtime labels and annotations.
	Runtime RuntimeMeta

	// VolcanoQueues are the cluster's Volcano queues, read for a job that
	// gangs with Volcano (nil otherwise): input.gang (internal/gang).
	VolcanoQueues *gang.Queues

	// Nodes are the cluster's nodes by shape (internal/capacity), nil when
	// none are known: input.capacity is then absent. RuntimeClasses are the
	// cluster's, whose scheduling the pods' placement merges.
	Nodes          *capacity.Summary
	RuntimeClasses []nodev1.RuntimeClass
}

// RuntimeMeta identifies a (Cluster)TrainingRuntime to policies.
type RuntimeMeta struct {
	Kind        string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// Document is the policy input of one job, built once by New: every part
// already an OPA value but the two the engine gives per evaluation, the
// parameters of the policy set serving and the findings about mpiguard's
// own entry (Value). It is read-only and safe for concurrent use.
type Document struct {
	src Source
	doc document // the parts as Go values (the schema), trainJob's entries empty
	// request, job, namespace, quotas, runtime and oldTrainJob (nil on
	// CREATE) are the parts of doc as OPA values.
	// gang is input.gang, nil for a job without a podGroupPolicy;
	// capacity is input.capacity, nil when no nodes are known.
	request, job, namespace, quotas, runtime, oldTrainJob, gang, capacity *ast.Term
	entries                                                               []Entry
}

// New builds the input document of src's job. An error means the job
// cannot be judged: refuse it, never allow it.
func New(src *Source) (*Document, error) {
	if err := validate(src); err != nil {
		return nil, err
	}
	d := &Document{src: *src, doc: build(src, NewQuotaState(src.Quotas, src.Reservations, src.Uncounted)), entries: ownEntriesOf(src)}
	if err := d.makeValues(); err != nil {
		return nil, fmt.Errorf("building the policy input of TrainJob %s/%s: %w", src.TrainJob.Namespace, src.TrainJob.Name, err)
	}
	return d, nil
}

// makeValues makes the parts of d.doc that Value does not give OPA values.
func (d *Document) makeValues() error {
	extern := externs{}
	d.request = d.doc.Request.value()
	d.job = d.doc.Job.value(&extern)
	d.namespace = d.doc.Namespace.value()
	d.quotas = listOf(d.doc.Quotas, (*quotaInput).value)
	d.runtime = d.doc.Runtime.value(&extern)
	if d.doc.OldTrainJob != nil {
		d.oldTrainJob = d.doc.OldTrainJob.value()
	}
	if d.doc.Gang != nil {
		d.gang = extern.term(d.doc.Gang)
	}
	if d.doc.Capacity != nil {
		d.capacity = capacityValue(d.doc.Capacity)
	}
	return extern.err
}

func validate(src *Source) error {
	switch {
	case src == nil || src.TrainJob == nil:
		return errors.New("policy input: request has no TrainJob")
	case src.View == nil:
		return fmt.Errorf("policy input: TrainJob %s/%s has no rendered view", src.TrainJob.Namespace, src.TrainJob.Name)
	case src.Operation != Create && src.Operation != Update:
		return fmt.Errorf("policy input: operation %q is not CREATE or UPDATE", src.Operation)
	case src.Operation == Update && src.OldTrainJob == nil:
		return fmt.Errorf("policy input: UPDATE of TrainJob %s/%s without the old object", src.TrainJob.Namespace, src.TrainJob.Name)
	}
	return nil
}

// Source is what d was built from. Callers must not modify it.
func (d *Document) Source() *Source { return &d.src }

// Against is d judged against another quota state: the same job, state's
// quotas and reservations. Only what reads them is built again:
// input.quotas and input.job.objects.quotas.
func (d *Document) Against(state *QuotaState) (*Document, error) {
	out := *d
	out.src.Quotas, out.src.Reservations, out.src.Uncounted = state.Quotas, state.Reservations, state.Uncounted
	out.doc.Quotas = quotasOf(&out.src, state)
	out.quotas = listOf(out.doc.Quotas, (*quotaInput).value)
	// Of input.job, only objects.quotas depends on the quota state: it alone
	// is built again, the other values shared (building all of input.job
	// again, the objects created and each replicated job, would dominate a
	// decision against a state whose reservations were built already:
	// BenchmarkJudgeManyHolders).
	out.doc.Job.Objects.Quotas = quota.ObjectQuotasOf(out.src.View, d.doc.Job.Objects.Created, state.Quotas, state.held())
	extern := externs{}
	objects := withItem(d.job.Get(ast.StringTerm("objects")), "quotas", extern.term(out.doc.Job.Objects.Quotas))
	out.job = withItem(d.job, "objects", objects)
	if extern.err != nil {
		return nil, fmt.Errorf("building the policy input of TrainJob %s/%s: %w", d.src.TrainJob.Namespace, d.src.TrainJob.Name, extern.err)
	}
	return &out, nil
}

// Entries are the job's entries under mpiguard's manager as far as they can
// be checked without the mutation (entries.go), a copy of the caller's own:
// the validating pass settles a pending one with Entry.Compare.
func (d *Document) Entries() []Entry { return append([]Entry(nil), d.entries...) }

// Value is the whole document as an OPA value, with parameters (the policy
// set's, checked and defaulted against each policy's schema) and entries
// (the findings of the validating pass; nil for the mutating pass) as
// input.parameters and input.trainJob.mpiguardEntries.
func (d *Document) Value(parameters *ast.Term, entries []Entry) ast.Value {
	trainJob := d.doc.TrainJob
	trainJob.MpiguardEntries = entriesOf(entries)
	if parameters == nil {
		parameters = ast.NullTerm() // as JSON writes a nil map
	}
	return d.object(trainJob.value(), parameters)
}

// object assembles the document from its parts.
func (d *Document) object(trainJob, parameters *ast.Term) ast.Value {
	obj := ast.NewObject(
		item("request", d.request),
		item("trainJob", trainJob),
		item("job", d.job),
		item("namespace", d.namespace),
		item("quotas", d.quotas),
		item("runtime", d.runtime),
		item("parameters", parameters),
	)
	if d.oldTrainJob != nil {
		obj.Insert(fieldName("oldTrainJob"), d.oldTrainJob)
	}
	if d.gang != nil {
		obj.Insert(fieldName("gang"), d.gang)
	}
	if d.capacity != nil {
		obj.Insert(fieldName("capacity"), d.capacity)
	}
	return obj
}
