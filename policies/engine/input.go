package engine

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/mpiguard/mpiguard/policies/quota"
	"github.com/mpiguard/mpiguard/policies/render"
)

// The input document is built directly as an OPA value: no JSON round trip,
// and only what policies read. docs/policies.md documents its schema.

// Object keys are interned: the same immutable terms in every input.
var (
	kValue, kMilli, kDisplay                         = ast.StringTerm("value"), ast.StringTerm("milli"), ast.StringTerm("display")
	kRequests, kLimits, kPods                        = ast.StringTerm("requests"), ast.StringTerm("limits"), ast.StringTerm("pods")
	kMissingRequests, kMissingLimits                 = ast.StringTerm("missingRequests"), ast.StringTerm("missingLimits")
	kName, kNamespace, kRole, kKind                  = ast.StringTerm("name"), ast.StringTerm("namespace"), ast.StringTerm("role"), ast.StringTerm("kind")
	kLabels, kAnnotations, kNodeSelector             = ast.StringTerm("labels"), ast.StringTerm("annotations"), ast.StringTerm("nodeSelector")
	kPerPod, kPriorityClassName, kTerminating        = ast.StringTerm("perPod"), ast.StringTerm("priorityClassName"), ast.StringTerm("terminating")
	kTerms, kMatchExpressions, kMatchFields          = ast.StringTerm("requiredNodeSelectorTerms"), ast.StringTerm("matchExpressions"), ast.StringTerm("matchFields")
	kKey, kOperator, kValues                         = ast.StringTerm("key"), ast.StringTerm("operator"), ast.StringTerm("values")
	kField                                           = ast.StringTerm("field")
	kRequest, kOperation, kUser, kUsername, kGroups  = ast.StringTerm("request"), ast.StringTerm("operation"), ast.StringTerm("user"), ast.StringTerm("username"), ast.StringTerm("groups")
	kDryRun                                          = ast.StringTerm("dryRun")
	kTrainJob, kOldTrainJob, kJob, kQuotas, kRuntime = ast.StringTerm("trainJob"), ast.StringTerm("oldTrainJob"), ast.StringTerm("job"), ast.StringTerm("quotas"), ast.StringTerm("runtime")
	kParameters                                      = ast.StringTerm("parameters")
	kSuspend, kActiveDeadlineSeconds                 = ast.StringTerm("suspend"), ast.StringTerm("activeDeadlineSeconds")
	kNumNodes, kNumProcPerNode, kEnv                 = ast.StringTerm("numNodes"), ast.StringTerm("numProcPerNode"), ast.StringTerm("env")
	kRuntimePatchManagers                            = ast.StringTerm("runtimePatchManagers")
	kMPI, kMPIImplementation, kRunLauncherAsNode     = ast.StringTerm("mpi"), ast.StringTerm("mpiImplementation"), ast.StringTerm("runLauncherAsNode")
	kSlotsPerWorker, kGPUsPerWorker                  = ast.StringTerm("slotsPerWorker"), ast.StringTerm("gpusPerWorker")
	kLauncher, kWorkers, kReplicatedJobs, kTotal     = ast.StringTerm("launcher"), ast.StringTerm("workers"), ast.StringTerm("replicatedJobs"), ast.StringTerm("total")
	kProblems, kType, kDetail                        = ast.StringTerm("problems"), ast.StringTerm("type"), ast.StringTerm("detail")
	kHard, kUsed, kReserved, kReservedBy, kRoles     = ast.StringTerm("hard"), ast.StringTerm("used"), ast.StringTerm("reserved"), ast.StringTerm("reservedBy"), ast.StringTerm("roles")
	kDemand, kResource, kParts                       = ast.StringTerm("demand"), ast.StringTerm("resource"), ast.StringTerm("parts")
	kPerPodMilli, kUndeclared                        = ast.StringTerm("perPodMilli"), ast.StringTerm("undeclared")
	kRequested                                       = ast.StringTerm("requested")
)

func item(k *ast.Term, v *ast.Term) [2]*ast.Term { return [2]*ast.Term{k, v} }

// Small values recur in every input; like the keys, they are shared
// immutable terms instead of fresh allocations.
var (
	trueTerm, falseTerm = ast.BooleanTerm(true), ast.BooleanTerm(false)
	smallInts           = func() (out [1025]*ast.Term) {
		for i := range out {
			out[i] = ast.IntNumberTerm(i)
		}
		return out
	}()
	sharedStrings = func() map[string]*ast.Term {
		out := map[string]*ast.Term{}
		for _, s := range []string{"launcher", "worker", "other", "requests", "limits", "pods", "node", "CREATE", "UPDATE", ""} {
			out[s] = ast.StringTerm(s)
		}
		return out
	}()
)

func intTerm[T ~int32 | ~int64 | ~int](n T) *ast.Term {
	if n >= 0 && int64(n) < int64(len(smallInts)) {
		return smallInts[n]
	}
	return ast.IntNumberTerm(int(n))
}

func boolTerm(b bool) *ast.Term {
	if b {
		return trueTerm
	}
	return falseTerm
}

// stringTerm shares the terms of common strings (roles, kinds, operations).
func stringTerm(s string) *ast.Term {
	if t, ok := sharedStrings[s]; ok {
		return t
	}
	return ast.StringTerm(s)
}

// buildInput assembles the whole input document for one request; ns is
// input.namespace (namespaceTerm), built by the caller, which also keys the
// static rules on it.
func buildInput(req *Request, params, ns *ast.Term) ast.Value {
	tj := req.TrainJob
	items := make([][2]*ast.Term, 0, 8)
	items = append(items,
		item(kRequest, requestTerm(req)),
		item(kTrainJob, trainJobTerm(tj, req.entries)),
		item(kJob, jobTerm(req.View)),
		item(kNamespace, ns),
		item(kQuotas, quotasTerm(req)),
		item(kRuntime, ast.ObjectTerm(
			item(kKind, vocabularyTerm(req.Runtime.Kind)),
			item(kName, vocabularyTerm(req.Runtime.Name)),
			item(kLabels, stringMapTerm(req.Runtime.Labels)),
			item(kAnnotations, stringMapTerm(req.Runtime.Annotations)),
			item(kConstraints, constraintsTerm(req.Runtime.Annotations)),
		)),
		item(kParameters, params),
	)
	if req.OldTrainJob != nil {
		items = append(items, item(kOldTrainJob, trainJobTerm(req.OldTrainJob, nil)))
	}
	return ast.NewObject(items...)
}

func requestTerm(req *Request) *ast.Term {
	groups := emptyArray
	if len(req.Groups) > 0 {
		gs := make([]*ast.Term, len(req.Groups))
		for i, g := range req.Groups {
			gs[i] = vocabularyTerm(g)
		}
		groups = ast.ArrayTerm(gs...)
	}
	return ast.ObjectTerm(
		item(kOperation, stringTerm(string(req.Operation))),
		item(kUser, ast.ObjectTerm(item(kUsername, ast.StringTerm(req.User)), item(kGroups, groups))),
		item(kDryRun, boolTerm(req.DryRun)),
	)
}

// trainJobTerm is input.trainJob (entries: its entries under mpiguard's
// manager, as checked) or input.oldTrainJob (entries nil).
func trainJobTerm(tj *trainer.TrainJob, entries []ownEntry) *ast.Term {
	items := make([][2]*ast.Term, 0, 12)
	items = append(items,
		item(kName, ast.StringTerm(tj.Name)),
		item(kNamespace, vocabularyTerm(tj.Namespace)),
		item(kLabels, stringMapTerm(tj.Labels)),
		item(kAnnotations, stringMapTerm(tj.Annotations)),
		item(kSuspend, boolTerm(tj.Spec.Suspend != nil && *tj.Spec.Suspend)),
		item(kEnv, envTerm(tj)),
	)
	items = append(items, item(kActiveDeadlineSeconds, intTerm(tj.Spec.ActiveDeadlineSeconds)))
	if t := tj.Spec.Trainer; t != nil {
		if t.NumNodes != nil {
			items = append(items, item(kNumNodes, intTerm(*t.NumNodes)))
		}
		if t.NumProcPerNode != nil {
			items = append(items, item(kNumProcPerNode, intTerm(*t.NumProcPerNode)))
		}
	}
	managers := emptyArray
	if len(tj.Spec.RuntimePatches) > 0 {
		ms := make([]*ast.Term, len(tj.Spec.RuntimePatches))
		for i, p := range tj.Spec.RuntimePatches {
			ms[i] = vocabularyTerm(p.Manager)
		}
		managers = ast.ArrayTerm(ms...)
	}
	items = append(items, item(kRuntimePatchManagers, managers), item(kMpiguardEntries, ownEntriesTerm(entries)))
	return ast.NewTerm(ast.NewObject(items...))
}

// envTerm lists every environment variable the user sets on the job, with the
// field path that sets it: spec.trainer.env and the containers of every
// runtime patch. Entries under mpiguard's manager included: mpiguard writes no
// env, so env there was written by someone posing as mpiguard, and is judged
// like any other (the mpiguard-entry policy denies the entry itself).
func envTerm(tj *trainer.TrainJob) *ast.Term {
	var envs []*ast.Term
	add := func(field string, e corev1.EnvVar) {
		envs = append(envs, ast.ObjectTerm(
			item(kField, ast.StringTerm(field)),
			item(kName, ast.StringTerm(e.Name)),
			item(kValue, ast.StringTerm(e.Value)),
		))
	}
	if tj.Spec.Trainer != nil {
		for i, e := range tj.Spec.Trainer.Env {
			add(fmt.Sprintf("spec.trainer.env[%d]", i), e)
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
					add(fmt.Sprintf("spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].template.spec.template.spec.containers[%d].env[%d]", pi, ji, ci, ei), e)
				}
			}
		}
	}
	if len(envs) == 0 {
		return emptyArray
	}
	return ast.ArrayTerm(envs...)
}

func namespaceTerm(ns *corev1.Namespace, name string) *ast.Term {
	if ns == nil {
		return ast.ObjectTerm(item(kName, vocabularyTerm(name)), item(kLabels, emptyObject), item(kAnnotations, emptyObject))
	}
	return ast.ObjectTerm(
		item(kName, vocabularyTerm(ns.Name)),
		item(kLabels, stringMapTerm(ns.Labels)),
		item(kAnnotations, stringMapTerm(ns.Annotations)),
	)
}

// jobTerm is input.job. Without problems and with at most maxCachedRoles
// replicated jobs (every MPI job), it is shared between requests by its
// parts: scalars and the (shared) terms of its replicated jobs and total.
func jobTerm(v *render.JobView) *ast.Term {
	var roles [maxCachedRoles]*ast.Term
	var launcher, workers int8 = -1, -1
	if len(v.Problems) > 0 || len(v.ReplicatedJobs) > maxCachedRoles {
		return newJobTerm(v)
	}
	for i := range v.ReplicatedJobs {
		rj := &v.ReplicatedJobs[i]
		roles[i] = roleTerm(rj)
		if v.Launcher != nil && v.Launcher.Name == rj.Name {
			launcher = int8(i)
		}
		if v.Workers != nil && v.Workers.Name == rj.Name {
			workers = int8(i)
		}
	}
	key := jobKey{
		mpi: v.MPI, runLauncherAsNode: v.RunLauncherAsNode, implementation: v.MPIImplementation,
		numNodes: v.NumNodes, slots: v.SlotsPerWorker, gpus: v.GPUsPerWorker,
		roles: roles, n: int8(len(v.ReplicatedJobs)), launcher: launcher, workers: workers,
		total: chargeTerm(&v.Total),
	}
	return jobTerms.get(key, func() *ast.Term { return newJobTerm(v) })
}

// maxCachedRoles is the most replicated jobs a cached input.job has.
const maxCachedRoles = 4

type jobKey struct {
	mpi, runLauncherAsNode bool
	implementation         string
	numNodes, slots        int32
	gpus                   int64
	roles                  [maxCachedRoles]*ast.Term
	n, launcher, workers   int8
	total                  *ast.Term
}

// roleKey identifies a replicated job's term by its scalars and the shared
// terms of its parts. Terms are immutable and the key holds them, so equal
// pointers mean equal content.
type roleKey struct {
	name, role, priorityClassName         string
	pods                                  int32
	terminating                           bool
	perPod, labels, annotations, selector *ast.Term
	terms                                 *ast.Term
	// requested is the replicated job's requested object.
	requested *ast.Term
}

var (
	jobTerms  = newKeyedCache[jobKey]()
	roleTerms = newKeyedCache[roleKey]()
)

func newJobTerm(v *render.JobView) *ast.Term {
	roles := make([]*ast.Term, len(v.ReplicatedJobs))
	var launcher, workers *ast.Term
	for i := range v.ReplicatedJobs {
		rj := &v.ReplicatedJobs[i]
		roles[i] = roleTerm(rj)
		if v.Launcher != nil && v.Launcher.Name == rj.Name {
			launcher = roles[i]
		}
		if v.Workers != nil && v.Workers.Name == rj.Name {
			workers = roles[i]
		}
	}
	problems := emptyArray
	if len(v.Problems) > 0 {
		ps := make([]*ast.Term, len(v.Problems))
		for i, p := range v.Problems {
			ps[i] = ast.ObjectTerm(
				item(kField, ast.StringTerm(p.Field)),
				item(kType, ast.StringTerm(string(p.Type))),
				item(kDetail, ast.StringTerm(p.ErrorBody())),
			)
		}
		problems = ast.ArrayTerm(ps...)
	}
	items := make([][2]*ast.Term, 0, 12)
	items = append(items,
		item(kMPI, boolTerm(v.MPI)),
		item(kMPIImplementation, vocabularyTerm(v.MPIImplementation)),
		item(kRunLauncherAsNode, boolTerm(v.RunLauncherAsNode)),
		item(kNumNodes, intTerm(v.NumNodes)),
		item(kSlotsPerWorker, intTerm(v.SlotsPerWorker)),
		item(kGPUsPerWorker, intTerm(v.GPUsPerWorker)),
		item(kReplicatedJobs, ast.ArrayTerm(roles...)),
		item(kTotal, chargeTerm(&v.Total)),
		item(kProblems, problems),
	)
	if launcher != nil {
		items = append(items, item(kLauncher, launcher))
	}
	if workers != nil {
		items = append(items, item(kWorkers, workers))
	}
	return ast.NewTerm(ast.NewObject(items...))
}

// roleTerm is a replicated job of input.job, shared between requests by its parts.
func roleTerm(rj *render.ReplicatedJobView) *ast.Term {
	spec := &rj.PodTemplate.Spec
	key := roleKey{
		name: rj.Name, role: string(rj.Role), priorityClassName: spec.PriorityClassName,
		pods: rj.Pods, terminating: quota.Terminating(spec),
		perPod:      chargeTerm(&rj.PerPod),
		labels:      stringMapTerm(rj.PodTemplate.Labels),
		annotations: stringMapTerm(rj.PodTemplate.Annotations),
		selector:    stringMapTerm(spec.NodeSelector),
		terms:       nodeTermsTerm(requiredTerms(spec)),
	}
	key.requested = requestedTerm(rj, key.labels, key.annotations)
	return roleTerms.get(key, func() *ast.Term {
		return ast.ObjectTerm(
			item(kName, vocabularyTerm(key.name)),
			item(kRole, stringTerm(key.role)),
			item(kPods, intTerm(key.pods)),
			item(kPerPod, key.perPod),
			item(kPriorityClassName, vocabularyTerm(key.priorityClassName)),
			item(kTerminating, boolTerm(key.terminating)),
			item(kLabels, key.labels),
			item(kAnnotations, key.annotations),
			item(kNodeSelector, key.selector),
			item(kTerms, key.terms),
			item(kRequested, key.requested),
		)
	})
}

// requestedTerm is a replicated job's requested: its pod template's labels and
// annotations as the runtime and every runtime patch but mpiguard's own entry
// make them (render.ReplicatedJobView.Requested), so policies judge what the
// user asked for as well as the effective pods. Without mpiguard's entry they
// are the effective ones (labels, annotations: shared terms).
func requestedTerm(rj *render.ReplicatedJobView, labels, annotations *ast.Term) *ast.Term {
	if rj.Requested != nil {
		labels, annotations = stringMapTerm(rj.Requested.Labels), stringMapTerm(rj.Requested.Annotations)
	}
	return requestedTerms.get(requestedKey{labels: labels, annotations: annotations}, func() *ast.Term {
		return ast.ObjectTerm(item(kLabels, labels), item(kAnnotations, annotations))
	})
}

// requestedKey identifies a requested term by its (shared) parts.
type requestedKey struct{ labels, annotations *ast.Term }

var requestedTerms = newKeyedCache[requestedKey]()

func requiredTerms(spec *corev1.PodSpec) []corev1.NodeSelectorTerm {
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	return spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
}

// nodeTermsTerm is requiredNodeSelectorTerms, shared between requests by content.
func nodeTermsTerm(terms []corev1.NodeSelectorTerm) *ast.Term {
	if len(terms) == 0 {
		return emptyArray
	}
	key := getKeyBuf()
	defer key.release()
	key.int(int64(len(terms)))
	for _, t := range terms {
		key.requirements(t.MatchExpressions)
		key.requirements(t.MatchFields)
	}
	return nodeTermsTerms.cached(key.b, func() *ast.Term { return newNodeTermsTerm(terms) })
}

func newNodeTermsTerm(terms []corev1.NodeSelectorTerm) *ast.Term {
	out := make([]*ast.Term, len(terms))
	for i, t := range terms {
		items := make([][2]*ast.Term, 0, 2)
		if len(t.MatchExpressions) > 0 {
			items = append(items, item(kMatchExpressions, requirementsTerm(t.MatchExpressions)))
		}
		if len(t.MatchFields) > 0 {
			items = append(items, item(kMatchFields, requirementsTerm(t.MatchFields)))
		}
		out[i] = ast.ObjectTerm(items...)
	}
	return ast.ArrayTerm(out...)
}

func requirementsTerm(reqs []corev1.NodeSelectorRequirement) *ast.Term {
	out := make([]*ast.Term, len(reqs))
	for i, r := range reqs {
		items := make([][2]*ast.Term, 0, 3)
		items = append(items, item(kKey, vocabularyTerm(r.Key)), item(kOperator, vocabularyTerm(string(r.Operator))))
		if len(r.Values) > 0 {
			vals := make([]*ast.Term, len(r.Values))
			for j, v := range r.Values {
				vals[j] = vocabularyTerm(v)
			}
			items = append(items, item(kValues, ast.ArrayTerm(vals...)))
		}
		out[i] = ast.ObjectTerm(items...)
	}
	return ast.ArrayTerm(out...)
}

// chargeTerm is what pods are charged, shared between requests by content.
func chargeTerm(c *render.Charge) *ast.Term {
	if !keyedExactly(c.Requests) || !keyedExactly(c.Limits) {
		return newChargeTerm(c)
	}
	key := getKeyBuf()
	defer key.release()
	key.resources(c.Requests)
	key.resources(c.Limits)
	key.int(c.Pods)
	key.names(c.MissingRequests)
	key.names(c.MissingLimits)
	return chargeTerms.cached(key.b, func() *ast.Term { return newChargeTerm(c) })
}

func newChargeTerm(c *render.Charge) *ast.Term {
	return ast.ObjectTerm(
		item(kRequests, resourcesTerm(c.Requests)),
		item(kLimits, resourcesTerm(c.Limits)),
		item(kPods, intTerm(c.Pods)),
		item(kMissingRequests, namesTerm(c.MissingRequests)),
		item(kMissingLimits, namesTerm(c.MissingLimits)),
	)
}

func namesTerm(names []corev1.ResourceName) *ast.Term {
	if len(names) == 0 {
		return emptyArray
	}
	out := make([]*ast.Term, len(names))
	for i, n := range names {
		out[i] = vocabularyTerm(string(n))
	}
	return ast.ArrayTerm(out...)
}

// resourcesTerm is a resource list, shared between requests by content.
func resourcesTerm(list corev1.ResourceList) *ast.Term {
	if len(list) == 0 {
		return emptyObject
	}
	if !keyedExactly(list) {
		return newResourcesTerm(list)
	}
	key := getKeyBuf()
	defer key.release()
	key.resources(list)
	return resourceTerms.cached(key.b, func() *ast.Term { return newResourcesTerm(list) })
}

// keyedExactly says whether a content key of list (keyBuf.resources: each
// quantity's milli amount and format) tells its quantities apart: not for
// amounts past the int64 range of milli units, where MilliValue wraps around,
// nor finer than a milli unit, which it rounds. Such lists are built per
// request instead.
func keyedExactly(list corev1.ResourceList) bool {
	for _, q := range list {
		if _, ok := quota.MilliInt64(q); !ok {
			return false
		}
	}
	return true
}

func newResourcesTerm(list corev1.ResourceList) *ast.Term {
	items := make([][2]*ast.Term, 0, len(list))
	for name, q := range list {
		items = append(items, item(vocabularyTerm(string(name)), quantityTerm(q)))
	}
	return ast.ObjectTerm(items...)
}

// quantityTerm gives Rego a quantity as numbers it can add exactly: value in
// base units (cores, bytes, devices; fractional only for CPU), milli as an
// integer, and display as kubectl would show it, all exact at any size. Terms
// are immutable, and the same few quantities recur in every request, so they
// are built once and shared; only quantities an int64 of milli units holds
// exactly are, since that is the key.
func quantityTerm(q resource.Quantity) *ast.Term {
	m, ok := quota.MilliInt64(q)
	if !ok {
		return newQuantityTerm(q, quota.Milli(q))
	}
	key := quantityKey{milli: m, format: q.Format}
	quantityCache.RLock()
	t, ok := quantityCache.terms[key]
	quantityCache.RUnlock()
	if ok {
		return t
	}
	t = newQuantityTerm(q, big.NewInt(m))
	quantityCache.Lock()
	if len(quantityCache.terms) < maxCachedQuantities {
		quantityCache.terms[key] = t
	}
	quantityCache.Unlock()
	return t
}

// quantityKey identifies a quantity's term: its amount and the format its
// display string is written in (1Gi and 1073741824 are the same amount).
type quantityKey struct {
	milli  int64
	format resource.Format
}

// maxCachedQuantities bounds the cache; quantities past it are built per request.
const maxCachedQuantities = 4096

var quantityCache = struct {
	sync.RWMutex
	terms map[quantityKey]*ast.Term
}{terms: map[quantityKey]*ast.Term{}}

// newQuantityTerm is q's term; m is q in milli units (quota.Milli).
func newQuantityTerm(q resource.Quantity, m *big.Int) *ast.Term {
	return ast.ObjectTerm(
		item(kValue, unitsTerm(m)),
		item(kMilli, bigTerm(m)),
		item(kDisplay, ast.StringTerm(q.String())),
	)
}

// unitsTerm is a milli amount in base units, as an exact decimal number:
// 4, 1.5, 0.001.
func unitsTerm(m *big.Int) *ast.Term {
	units, frac := new(big.Int).QuoRem(m, big1000, new(big.Int))
	if frac.Sign() == 0 {
		return bigTerm(units)
	}
	digits := strings.TrimRight(fmt.Sprintf("%03d", new(big.Int).Abs(frac).Int64()), "0")
	sign := ""
	if m.Sign() < 0 && units.Sign() == 0 {
		sign = "-" // -0.5: the integer part lost the sign
	}
	return ast.NumberTerm(json.Number(sign + units.String() + "." + digits))
}

// stringMapTerm is a map of strings (labels, annotations, node selector),
// shared between requests by content when small.
func stringMapTerm(m map[string]string) *ast.Term {
	if len(m) == 0 {
		return emptyObject
	}
	size := 0
	for k, v := range m {
		size += len(k) + len(v)
	}
	if size > maxCachedKey {
		return newStringMapTerm(m)
	}
	key := getKeyBuf()
	defer key.release()
	key.stringMap(m)
	return stringMapTerms.cached(key.b, func() *ast.Term { return newStringMapTerm(m) })
}

func newStringMapTerm(m map[string]string) *ast.Term {
	items := make([][2]*ast.Term, 0, len(m))
	for k, v := range m {
		items = append(items, item(vocabularyTerm(k), ast.StringTerm(v)))
	}
	return ast.ObjectTerm(items...)
}
