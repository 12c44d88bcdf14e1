package render

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	trainjobutil "github.com/kubeflow/trainer/v2/pkg/util/trainjob"
)

// buildView reads the rendered JobSet (and MPI hostfile) into a JobView.
func buildView(trainJob *trainer.TrainJob, runtimeObj client.Object, jobSet *jobsetv1alpha2.JobSet, replicas []int32, hostfile *string,
	admission *admissionContext) *JobView {
	view := &JobView{
		RuntimeKind: runtimeObj.GetObjectKind().GroupVersionKind().Kind,
		RuntimeName: runtimeObj.GetName(),
		// The Trainer's own test for the jobs it leaves to another controller.
		RunsElsewhere: trainjobutil.IsManagedByExternalController(trainJob),
	}
	mlPolicy := runtimeMLPolicy(runtimeObj)
	if mlPolicy != nil {
		view.NumNodes = ptr.Deref(mlPolicy.NumNodes, 1)
	}
	if trainJob.Spec.Trainer != nil && trainJob.Spec.Trainer.NumNodes != nil {
		view.NumNodes = *trainJob.Spec.Trainer.NumNodes
	}

	addReplicatedJobs(view, jobSet, replicas, admission)
	for i := range view.ReplicatedJobs {
		switch view.ReplicatedJobs[i].Role {
		case RoleLauncher:
			view.Launcher = &view.ReplicatedJobs[i]
		case RoleWorker:
			view.Workers = &view.ReplicatedJobs[i]
		}
	}

	if mlPolicy != nil && mlPolicy.MPI != nil {
		view.MPI = true
		view.MPIImplementation = string(ptr.Deref(mlPolicy.MPI.MPIImplementation, ""))
		view.RunLauncherAsNode = ptr.Deref(mlPolicy.MPI.RunLauncherAsNode, false)
		view.Hostfile = hostfileLines(hostfile)
		view.SlotsPerWorker = slotsPerWorker(view, trainJob, mlPolicy)
		if view.Workers != nil {
			view.GPUsPerWorker = gpuCount(view.Workers.PerPod.Requests)
		}
	}
	return view
}

// addReplicatedJobs adds the replicated jobs of jobSet to view: their pods
// (replicas[i] each, or the JobSet's own replicas when replicas is nil), as
// the apiserver admits them (LimitRanges, RuntimeClass overhead, the
// PriorityClass), and what each pod charges.
func addReplicatedJobs(view *JobView, jobSet *jobsetv1alpha2.JobSet, replicas []int32, admission *admissionContext) {
	rjPath := field.NewPath("spec", "replicatedJobs")
	view.ReplicatedJobs = make([]ReplicatedJobView, len(jobSet.Spec.ReplicatedJobs))
	for i := range jobSet.Spec.ReplicatedJobs {
		rj := &jobSet.Spec.ReplicatedJobs[i]
		rv := &view.ReplicatedJobs[i]
		rv.Name = rj.Name
		rv.Role = roleOf(rj.Name)
		n := rj.Replicas
		if replicas != nil {
			n = replicas[i]
		}
		rv.Pods = podCount(n, activePods(rj.Template.Spec.Parallelism, rj.Template.Spec.Completions))
		// The JobSet was decoded or read for this view only: the view may own it.
		rv.PodTemplate = rj.Template.Spec.Template

		podPath := rjPath.Key(rj.Name).Child("template", "spec", "template", "spec")
		problems := templateProblems(&rv.PodTemplate.Spec, podPath)
		pod, admissionProblems := admission.admittedPod(&rv.PodTemplate, podPath)
		problems = append(problems, admittedPodProblems(pod, podPath, problems)...)
		view.Problems = append(view.Problems, append(problems, admissionProblems...)...)
		rv.PerPod = podCharge(pod)
		rv.PriorityClassName = pod.Spec.PriorityClassName
		rv.ServiceAccountName = pod.Spec.ServiceAccountName
		addCharge(&view.Total, &rv.PerPod, rv.Pods)
	}
}

// OfJobSet is what an existing JobSet's pods charge: a view with its
// replicated jobs only (no MPI facts), for a stored job that cannot be
// rendered from its runtime but whose JobSet the Trainer built.
func OfJobSet(jobSet *jobsetv1alpha2.JobSet, limitRanges []corev1.LimitRange, runtimeClasses []nodev1.RuntimeClass) *JobView {
	view := &JobView{}
	addReplicatedJobs(view, jobSet.DeepCopy(), nil, newAdmissionContext(limitRanges, runtimeClasses))
	return view
}

func runtimeMLPolicy(obj client.Object) *trainer.MLPolicy {
	switch rt := obj.(type) {
	case *trainer.ClusterTrainingRuntime:
		return rt.Spec.MLPolicy
	case *trainer.TrainingRuntime:
		return rt.Spec.MLPolicy
	}
	return nil
}

func roleOf(name string) Role {
	switch name {
	case constants.Launcher:
		return RoleLauncher
	case constants.Node:
		return RoleWorker
	}
	return RoleOther
}

// activePods is how many pods a Job runs at once: parallelism (default 1), capped by
// completions when that is lower (the Job controller never runs more pods than
// completions still needed).
func activePods(parallelism, completions *int32) int32 {
	p := ptr.Deref(parallelism, 1)
	if completions != nil && *completions < p {
		p = *completions
	}
	return max(p, 0)
}

// podCount is replicas x pods per replica (both >= 0), capped at the int32
// maximum: the product overflowed int32, and a runtime with replicas 65536 and
// parallelism 65536 was charged 0 pods (found by FuzzRenderKnobs). The capped
// count is still more than any quota allows.
func podCount(replicas, perReplica int32) int32 {
	return int32(min(int64(replicas)*int64(perReplica), math.MaxInt32))
}

func hostfileLines(hostfile *string) []string {
	if hostfile == nil {
		return nil
	}
	lines := strings.Split(strings.TrimRight(*hostfile, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return []string{}
	}
	return lines
}

// slotsPerWorker reads the slots of the first hostfile line ("host slots=N"). With no
// hostfile line (numNodes 0) it falls back to the slots the MPI plugin exported to the
// launcher, then to the TrainJob/runtime value.
func slotsPerWorker(view *JobView, trainJob *trainer.TrainJob, mlPolicy *trainer.MLPolicy) int32 {
	for _, line := range view.Hostfile {
		if _, v, ok := strings.Cut(line, " slots="); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err == nil {
				return int32(n)
			}
		}
	}
	if view.Launcher != nil {
		for _, c := range view.Launcher.PodTemplate.Spec.Containers {
			for _, env := range c.Env {
				if env.Name == constants.OpenMPIEnvDefaultSlots {
					if n, err := strconv.ParseInt(env.Value, 10, 32); err == nil {
						return int32(n)
					}
				}
			}
		}
	}
	if trainJob.Spec.Trainer != nil && trainJob.Spec.Trainer.NumProcPerNode != nil {
		return *trainJob.Spec.Trainer.NumProcPerNode
	}
	return ptr.Deref(mlPolicy.MPI.NumProcPerNode, 1)
}

// gpuCount sums every resource whose name mentions "gpu" (nvidia.com/gpu,
// amd.com/gpu, ...), the Trainer's own notion of a GPU resource.
func gpuCount(list corev1.ResourceList) int64 {
	var n int64
	for name, q := range list {
		if strings.Contains(strings.ToLower(string(name)), "gpu") {
			n += q.Value()
		}
	}
	return n
}
