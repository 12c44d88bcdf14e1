package convert

import (
	"fmt"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// A curated runtime (runtimes/catalog) fits an MPIJob when the TrainJob
// alone can say what the MPIJob does on it: the Launcher is a node
// (runLauncherAsWorker), the Workers run the curated image with its sshd,
// the Launcher and every Worker get the same resources (the TrainJob's
// resourcesPerNode lands on both), the SSH keys are mounted where the image
// expects them, no gang scheduler is involved, and the pod templates hold
// nothing else (no volumes, node selection, security context, sidecars).
// Then the TrainJob names the curated runtime, and no runtime is written.

// curatedFit returns the curated runtime that fits job, or why none does.
// Only the plain variants are candidates (a gang's queue and priority live
// in a runtime); curated is the published set, sorted by name.
func curatedFit(job *MPIJob, gang string, curated []*trainer.ClusterTrainingRuntime) (*trainer.ClusterTrainingRuntime, string) {
	spec := job.Spec
	if len(curated) == 0 {
		return nil, "no curated runtime given"
	}
	if !ptr.Deref(spec.RunLauncherAsWorker, false) {
		return nil, "the curated runtimes run the Launcher as a node (runLauncherAsWorker: true); this MPIJob's Launcher runs no ranks"
	}
	if gang != GangNone || spec.RunPolicy.SchedulingPolicy != nil {
		return nil, "a gang scheduler's queue and priority live in a runtime of its own"
	}
	if spec.RunPolicy.BackoffLimit != nil {
		return nil, "runPolicy.backoffLimit goes on the launcher Job of a runtime of its own"
	}
	if spec.LauncherCreationPolicy != WaitForWorkersReady {
		return nil, "the curated runtimes start the Launcher once every Worker is Ready (launcherCreationPolicy: WaitForWorkersReady); this MPIJob starts it at once"
	}
	launcher, worker := spec.MPIReplicaSpecs[Launcher], spec.MPIReplicaSpecs[Worker]
	for role, rs := range map[string]*ReplicaSpec{Launcher: launcher, Worker: worker} {
		if reason := plainTemplate(rs); reason != "" {
			return nil, fmt.Sprintf("the %s's pod template %s, which only a runtime of its own carries", role, reason)
		}
	}
	lc, wc := launcher.Template.Spec.Containers[0], worker.Template.Spec.Containers[0]
	if len(lc.Command) == 0 || len(lc.Command)+len(lc.Args) < 2 {
		return nil, "the Launcher's command line is not a command with arguments, which the TrainJob must give to replace the curated launcher's own"
	}
	if !equality.Semantic.DeepEqual(lc.Resources, wc.Resources) {
		return nil, "the Launcher's and the Workers' resources differ; a curated runtime gives both the TrainJob's resourcesPerNode"
	}
	if !equality.Semantic.DeepEqual(lc.Env, wc.Env) {
		return nil, "the Launcher's and the Workers' env differ; a curated runtime gives both the TrainJob's env"
	}
	impl := spec.MPIImplementation
	if impl == "" {
		impl = OpenMPI
	}
	for _, rt := range curated {
		if rt.Labels[catalog.LabelGangScheduler] != "" || rt.Spec.PodGroupPolicy != nil {
			continue
		}
		mpi := rt.Spec.MLPolicy
		if mpi == nil || mpi.MPI == nil || !ptr.Deref(mpi.MPI.RunLauncherAsNode, false) {
			continue
		}
		if want := map[string]string{OpenMPI: "OpenMPI", Intel: "IntelMPI", MPICH: "MPICH"}[impl]; rt.Labels[catalog.LabelMPIImplementation] != want {
			continue
		}
		node := nodeContainer(rt, constants.Node)
		if node == nil || node.Image != wc.Image {
			continue
		}
		if !slices.Equal(append(slices.Clone(node.Command), node.Args...), append(slices.Clone(wc.Command), wc.Args...)) {
			continue
		}
		path := spec.SSHAuthMountPath
		if path == "" {
			path = DefaultSSHAuthMountPath
		}
		if ptr.Deref(mpi.MPI.SSHAuthMountPath, "") != path {
			continue
		}
		return rt, ""
	}
	return nil, "no curated runtime has the Workers' image with its sshd command, the MPI implementation and the SSH key path of this MPIJob"
}

// plainTemplate says what a replica's pod template holds besides one
// container's name, image, command, args, resources and env.
func plainTemplate(rs *ReplicaSpec) string {
	t := rs.Template
	if len(t.Labels)+len(t.Annotations) > 0 {
		return "has labels or annotations"
	}
	ps := t.Spec.DeepCopy()
	ps.RestartPolicy = ""
	if len(ps.Containers) != 1 {
		return "has more than one container"
	}
	c := ps.Containers[0]
	ps.Containers = nil
	if !equality.Semantic.DeepEqual(*ps, corev1.PodSpec{}) {
		return "sets pod fields (volumes, node selection, security context, ...)"
	}
	rest := corev1.Container{Name: c.Name, Image: c.Image, Command: c.Command, Args: c.Args, Resources: c.Resources, Env: c.Env}
	if !equality.Semantic.DeepEqual(c, rest) {
		return "sets container fields besides image, command, args, resources and env"
	}
	return ""
}

func nodeContainer(rt *trainer.ClusterTrainingRuntime, job string) *corev1.Container {
	for _, rj := range rt.Spec.Template.Spec.ReplicatedJobs {
		if rj.Name != job {
			continue
		}
		for i, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name == constants.Node {
				return &rj.Template.Spec.Template.Spec.Containers[i]
			}
		}
	}
	return nil
}
