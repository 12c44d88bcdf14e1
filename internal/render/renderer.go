package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sync"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetv1alpha2ac "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	fwkcore "github.com/kubeflow/trainer/v2/pkg/runtime/framework/core"
	fwkplugins "github.com/kubeflow/trainer/v2/pkg/runtime/framework/plugins"
)

// MaxNumNodes bounds trainer.numNodes (and the runtime's mlPolicy.numNodes) that
// Render accepts. The Trainer writes one hostfile line per node, so an absurd
// numNodes would cost the admission webhook seconds and megabytes per request;
// no MPI job comes near this.
const MaxNumNodes = 10000

// Input is everything a TrainJob's pods depend on.
type Input struct {
	// TrainJob to render. It is not modified.
	TrainJob *trainer.TrainJob
	// Runtime is the *trainer.ClusterTrainingRuntime or *trainer.TrainingRuntime the
	// TrainJob's spec.runtimeRef names. It is not modified.
	Runtime client.Object
	// LimitRanges of the TrainJob's namespace: their container defaults are applied
	// to every pod, as the LimitRanger admission plugin does.
	LimitRanges []corev1.LimitRange
	// RuntimeClasses of the cluster: a pod's runtimeClassName adds its pod overhead.
	RuntimeClasses []nodev1.RuntimeClass
	// PriorityClasses of the cluster, as the Priority admission plugin reads
	// them: a pod naming none gets the globalDefault class, a pod naming one
	// that does not exist is rejected. None: not known (a cluster always has
	// the built-in system classes), and pods are taken as they name theirs.
	PriorityClasses []schedulingv1.PriorityClass
	// ServiceAccounts of the TrainJob's namespace, as the ServiceAccount
	// admission plugin reads them: a pod naming one that does not exist is
	// rejected. None: not known, and pods are taken to run as they name.
	ServiceAccounts []corev1.ServiceAccount
	// OwnManager is the manager of the caller's own spec.runtimePatches entry
	// (mpiguard's). When the TrainJob has one, each ReplicatedJobView's
	// Requested says what its pod template's labels and annotations are
	// without it: what the runtime and everyone else asked for, which the
	// caller's entry, applied last, may override.
	OwnManager string
}

// Renderer renders TrainJobs with the Kubeflow Trainer's own runtime framework.
// Build it once (NewRenderer) and share it: Render is safe for concurrent use.
type Renderer struct {
	// runtimes is the Trainer's runtime registry: Render checks a TrainJob's
	// runtimeRef kind against it (the runtime info itself is built by
	// runtimeInfo, the Trainer's RuntimeInfo with its runtime-only steps cached).
	runtimes map[string]trainerruntime.Runtime
	// framework is a second instance of the Trainer's plugin framework with the same
	// registry the runtimes use: it runs the component builder plugins (JobSet, MPI
	// hostfile, PodGroup) on the runtime info, exactly as Runtime.NewObjects does.
	framework *fwkcore.Framework
	// templates keeps runtime templates with runtime patches merged in.
	templates *templateCache
	// runtimesChecked holds the keys (runtimeCacheKey) of the runtime
	// versions whose quantities passed checkQuantities: a version's spec
	// does not change, so it is walked once, not on every render.
	runtimesChecked *lru.Cache
}

// newRendererMu serialises NewRenderer: runtimecore.New writes package-level
// variables of the Trainer (its runtime registry and factory).
var newRendererMu sync.Mutex

// NewRenderer initialises the Trainer's runtime framework offline (fake client,
// no-op indexer, default Trainer configuration). The framework keeps package-level
// state, so call it once at startup, not per request.
func NewRenderer(ctx context.Context) (*Renderer, error) {
	newRendererMu.Lock()
	defer newRendererMu.Unlock()
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(trainer.AddToScheme(scheme))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(scheme))

	cfg := &configapi.Configuration{}
	configapi.SetDefaults_Configuration(cfg)

	c := newOfflineClient(scheme)
	runtimes, err := runtimecore.New(ctx, c, noopIndexer{}, cfg)
	if err != nil {
		return nil, fmt.Errorf("initialising the Trainer runtime framework: %w", err)
	}
	fwk, err := fwkcore.New(ctx, c, fwkplugins.NewRegistry(), noopIndexer{}, cfg)
	if err != nil {
		return nil, fmt.Errorf("initialising the Trainer plugin framework: %w", err)
	}
	return &Renderer{runtimes: runtimes, framework: fwk, templates: newTemplateCache(), runtimesChecked: lru.New(templateCacheSize)}, nil
}

// Render returns what in.TrainJob will create with in.Runtime: the JobSet the Trainer
// controller would apply, read back as a JobView. Errors mean the TrainJob cannot be
// rendered at all (wrong or missing runtime, undefaulted objects, Trainer errors);
// pods that render but would be rejected are reported in JobView.Problems instead.
func (r *Renderer) Render(ctx context.Context, in Input) (view *JobView, err error) {
	if r == nil || r.runtimes == nil {
		return nil, errors.New("render: Renderer is not initialised; build it with NewRenderer")
	}
	trainJob, runtimeObj, spec, err := prepareInput(in)
	if err != nil {
		return nil, err
	}
	runtimeKey := runtimeCacheKey(runtimeObj.GetObjectKind().GroupVersionKind().Kind, runtimeObj)
	// Before anything computes with them (quantities.go).
	if err := checkQuantities("TrainJob "+trainJob.Namespace+"/"+trainJob.Name, field.NewPath("spec"), &trainJob.Spec); err != nil {
		return nil, err
	}
	if err := r.checkRuntimeQuantities(runtimeKey, runtimeObj, spec); err != nil {
		return nil, err
	}
	_, ok := r.runtimes[trainerruntime.RuntimeRefToRuntimeRegistryKey(trainJob.Spec.RuntimeRef)]
	if !ok {
		return nil, fmt.Errorf("render: TrainJob %s: spec.runtimeRef kind %q in group %q is not a runtime kind the Trainer supports",
			trainJob.Name, ptr.Deref(trainJob.Spec.RuntimeRef.Kind, ""), ptr.Deref(trainJob.Spec.RuntimeRef.APIGroup, ""))
	}

	// The Trainer's plugins dereference fields the apiserver defaults; guard against
	// anything the checks above missed so bad input is an error, never a crash.
	defer func() {
		if p := recover(); p != nil {
			view, err = nil, fmt.Errorf("render: TrainJob %s: the Trainer runtime failed on this input: %v", trainJob.Name, p)
		}
	}()
	// Runtime.NewObjects is: read the runtime (or its snapshot), RuntimeInfo, then
	// RunComponentBuilderPlugins. The runtime snapshot it also writes is a YAML copy
	// of the runtime kept for later reconciles; it changes nothing that is built, and
	// YAML-encoding it would be most of the render's cost. So the same steps run here
	// without it, RuntimeInfo with its runtime-only conversions cached (runtimeinfo.go);
	// the fidelity suite (test/integration/render) compares the result with the JobSet
	// the real Trainer controller creates.
	info, err := r.runtimeInfo(runtimeKey, trainJob, spec)
	if err != nil {
		if mpi := spec.MLPolicy; mpi != nil && mpi.MPI != nil && ptr.Deref(mpi.MPI.MPIImplementation, "") != trainer.MPIImplementationOpenMPI {
			// The Trainer's message prints a pointer; say what is wrong instead.
			return nil, fmt.Errorf("render: TrainJob %s: %s %q has spec.mlPolicy.mpi.mpiImplementation %q, but Trainer v2.3.0 only builds %s launchers and rejects it (%v); use mpiImplementation %s",
				trainJob.Name, *trainJob.Spec.RuntimeRef.Kind, runtimeObj.GetName(), ptr.Deref(mpi.MPI.MPIImplementation, ""),
				trainer.MPIImplementationOpenMPI, err, trainer.MPIImplementationOpenMPI)
		}
		return nil, fmt.Errorf("render: TrainJob %s: the Trainer cannot apply runtime %s %q: %w", trainJob.Name, *trainJob.Spec.RuntimeRef.Kind, runtimeObj.GetName(), err)
	}
	rr := &renderRequest{runtime: runtimeObj}
	objects, err := r.framework.RunComponentBuilderPlugins(withRenderRequest(ctx, rr), info, trainJob)
	if err != nil {
		return nil, fmt.Errorf("render: TrainJob %s: the Trainer cannot build its objects: %w", trainJob.Name, err)
	}

	var jobSetApply *jobsetv1alpha2ac.JobSetApplyConfiguration
	var hostfile *string
	for _, obj := range objects {
		switch o := obj.(type) {
		case *jobsetv1alpha2ac.JobSetApplyConfiguration:
			jobSetApply = o
		case *corev1ac.ConfigMapApplyConfiguration:
			if o.Name != nil && *o.Name == trainJob.Name+constants.MPIHostfileConfigMapSuffix {
				if h, ok := o.Data[constants.MPIHostfileName]; ok {
					hostfile = &h
				}
			}
		}
	}
	if jobSetApply == nil || jobSetApply.Spec == nil {
		return nil, fmt.Errorf("render: TrainJob %s: the Trainer built no JobSet for runtime %s %q", trainJob.Name, runtimeObj.GetObjectKind().GroupVersionKind().Kind, runtimeObj.GetName())
	}
	jobSet, err := typedJobSet(jobSetApply)
	if err != nil {
		return nil, fmt.Errorf("render: TrainJob %s: reading the rendered JobSet: %w", trainJob.Name, err)
	}
	replicas := replicaCounts(jobSetApply)
	view = buildView(trainJob, runtimeObj, jobSet, replicas, hostfile, newAdmissionContext(in.LimitRanges, in.RuntimeClasses).withPriorityClasses(in.PriorityClasses).withServiceAccounts(in.ServiceAccounts))
	if view.Objects, err = objectsOf(trainJob, objects, rr.secrets, jobSet, replicas); err != nil {
		return nil, fmt.Errorf("render: TrainJob %s: %w", trainJob.Name, err)
	}
	view.Gang = gangOf(objects)
	if err := r.addRequested(view, runtimeObj, trainJob, spec, in.OwnManager); err != nil {
		return nil, fmt.Errorf("render: TrainJob %s: merging the runtime patches other than %s's: %w", trainJob.Name, in.OwnManager, err)
	}
	return view, nil
}

// typedJobSet converts the JobSet apply configuration to the typed JobSet: both
// share their JSON form, which is what the Trainer's server-side apply sends
// the apiserver. It goes through that JSON form with encoding/json, as
// client-go does on the wire: a second JSON library would save little next to
// a create through the apiserver (BenchmarkRender64Workers).
func typedJobSet(ac *jobsetv1alpha2ac.JobSetApplyConfiguration) (*jobsetv1alpha2.JobSet, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	js := &jobsetv1alpha2.JobSet{}
	if err := json.Unmarshal(data, js); err != nil {
		return nil, err
	}
	return js, nil
}

// replicaCounts reads each replicated job's replicas from the apply configuration,
// where "unset" is still visible: the JobSet CRD defaults it to 1 on create.
func replicaCounts(ac *jobsetv1alpha2ac.JobSetApplyConfiguration) []int32 {
	out := make([]int32, len(ac.Spec.ReplicatedJobs))
	for i, rj := range ac.Spec.ReplicatedJobs {
		out[i] = max(ptr.Deref(rj.Replicas, 1), 0)
	}
	return out
}

// prepareInput checks in and returns deep copies the Trainer may mutate.
func prepareInput(in Input) (*trainer.TrainJob, client.Object, *trainer.TrainingRuntimeSpec, error) {
	if in.TrainJob == nil {
		return nil, nil, nil, errors.New("render: no TrainJob given")
	}
	trainJob := in.TrainJob.DeepCopy()
	if trainJob.Name == "" {
		// A TrainJob created with generateName has no name yet at admission. The name
		// only appears in host names, never in what the pods request.
		trainJob.Name = trainJob.GenerateName + "pending"
	}
	if trainJob.Spec.RuntimeRef.Name == "" {
		return nil, nil, nil, fmt.Errorf("render: TrainJob %s: spec.runtimeRef.name is empty", trainJob.Name)
	}

	var runtimeObj client.Object
	var spec *trainer.TrainingRuntimeSpec
	var kind string
	switch rt := in.Runtime.(type) {
	case *trainer.ClusterTrainingRuntime:
		if rt == nil {
			return nil, nil, nil, missingRuntime(trainJob)
		}
		c := rt.DeepCopy()
		c.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
		runtimeObj, spec, kind = c, &c.Spec, trainer.ClusterTrainingRuntimeKind
	case *trainer.TrainingRuntime:
		if rt == nil {
			return nil, nil, nil, missingRuntime(trainJob)
		}
		c := rt.DeepCopy()
		c.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.TrainingRuntimeKind))
		if c.Namespace == "" {
			c.Namespace = trainJob.Namespace
		}
		if c.Namespace != trainJob.Namespace {
			return nil, nil, nil, fmt.Errorf("render: TrainJob %s/%s: TrainingRuntime %s/%s is in another namespace; a TrainJob can only use a TrainingRuntime of its own namespace",
				trainJob.Namespace, trainJob.Name, c.Namespace, c.Name)
		}
		runtimeObj, spec, kind = c, &c.Spec, trainer.TrainingRuntimeKind
	case nil:
		return nil, nil, nil, missingRuntime(trainJob)
	default:
		return nil, nil, nil, fmt.Errorf("render: TrainJob %s: runtime has type %T; want *ClusterTrainingRuntime or *TrainingRuntime", trainJob.Name, in.Runtime)
	}

	ref := &trainJob.Spec.RuntimeRef
	// The apiserver defaults apiGroup and kind; fill them from the runtime given so a
	// TrainJob that skipped defaulting still resolves to the right runtime.
	if ref.APIGroup == nil {
		ref.APIGroup = ptr.To(trainer.GroupVersion.Group)
	}
	if ref.Kind == nil {
		ref.Kind = ptr.To(kind)
	}
	if *ref.Kind != kind || ref.Name != runtimeObj.GetName() {
		return nil, nil, nil, fmt.Errorf("render: TrainJob %s refers to %s %q but the runtime given is %s %q",
			trainJob.Name, *ref.Kind, ref.Name, kind, runtimeObj.GetName())
	}
	if n := trainJob.Spec.Trainer; n != nil && n.NumNodes != nil && *n.NumNodes > MaxNumNodes {
		return nil, nil, nil, fmt.Errorf("render: TrainJob %s: spec.trainer.numNodes %d is more than the %d nodes mpiguard renders; use at most %d nodes",
			trainJob.Name, *n.NumNodes, MaxNumNodes, MaxNumNodes)
	}
	if spec.MLPolicy != nil && spec.MLPolicy.NumNodes != nil && *spec.MLPolicy.NumNodes > MaxNumNodes {
		return nil, nil, nil, fmt.Errorf("render: %s %q: spec.mlPolicy.numNodes %d is more than the %d nodes mpiguard renders",
			kind, runtimeObj.GetName(), *spec.MLPolicy.NumNodes, MaxNumNodes)
	}
	if err := checkDefaulted(spec.MLPolicy, kind, runtimeObj.GetName()); err != nil {
		return nil, nil, nil, err
	}
	if err := patchTargetsError(trainJob, spec, kind, runtimeObj.GetName()); err != nil {
		return nil, nil, nil, fmt.Errorf("render: TrainJob %s: %w", trainJob.Name, err)
	}
	return trainJob, runtimeObj, spec, nil
}

func missingRuntime(tj *trainer.TrainJob) error {
	return fmt.Errorf("render: TrainJob %s: no runtime given for spec.runtimeRef %q", tj.Name, tj.Spec.RuntimeRef.Name)
}

// checkDefaulted rejects runtimes whose MPI policy lacks the fields the apiserver
// defaults: the Trainer dereferences them.
func checkDefaulted(mlPolicy *trainer.MLPolicy, kind, name string) error {
	if mlPolicy == nil || mlPolicy.MPI == nil {
		return nil
	}
	var missing []string
	if mlPolicy.MPI.NumProcPerNode == nil {
		missing = append(missing, "numProcPerNode")
	}
	if mlPolicy.MPI.MPIImplementation == nil {
		missing = append(missing, "mpiImplementation")
	}
	if mlPolicy.MPI.SSHAuthMountPath == nil {
		missing = append(missing, "sshAuthMountPath")
	}
	if len(missing) > 0 {
		return fmt.Errorf("render: %s %q: spec.mlPolicy.mpi has no %v: the object was not defaulted by the apiserver; apply render.ApplyDefaults to objects read from files",
			kind, name, missing)
	}
	return nil
}
