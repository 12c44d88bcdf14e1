package networkpolicies

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runtimeInfo is what the controller needs to know about a TrainJob's runtime.
type runtimeInfo struct {
	// found is false when the referenced runtime does not exist (yet).
	found bool
	// mpi is true when the runtime has mlPolicy.mpi.
	mpi bool
	// source carries the runtime's annotations and template sshd port for resolveSettings.
	source annotated
}

// runtimeKey identifies a runtime a TrainJob points at; it is also the value of
// the TrainJob field index, so a runtime change finds its jobs without a scan.
// Empty when the reference is not to a Trainer runtime.
func runtimeKey(job *trainer.TrainJob) string {
	ref := job.Spec.RuntimeRef
	if ref.APIGroup != nil && *ref.APIGroup != trainer.GroupVersion.Group {
		return ""
	}
	kind := trainer.ClusterTrainingRuntimeKind
	if ref.Kind != nil && *ref.Kind != "" {
		kind = *ref.Kind
	}
	switch kind {
	case trainer.ClusterTrainingRuntimeKind:
		return clusterRuntimeKey(ref.Name)
	case trainer.TrainingRuntimeKind:
		return namespacedRuntimeKey(job.Namespace, ref.Name)
	}
	return ""
}

func clusterRuntimeKey(name string) string { return trainer.ClusterTrainingRuntimeKind + "/" + name }

func namespacedRuntimeKey(namespace, name string) string {
	return trainer.TrainingRuntimeKind + "/" + namespace + "/" + name
}

// lookupRuntime reads the job's runtime through c (the manager's cache). A
// reference to something that is not a Trainer runtime is "found, not MPI": the
// Trainer would not run it as MPI either.
func lookupRuntime(ctx context.Context, c client.Reader, job *trainer.TrainJob) (runtimeInfo, error) {
	ref := job.Spec.RuntimeRef
	var (
		spec trainer.TrainingRuntimeSpec
		info runtimeInfo
		err  error
	)
	switch key := runtimeKey(job); {
	case key == "":
		return runtimeInfo{found: true}, nil
	case key == clusterRuntimeKey(ref.Name):
		var rt trainer.ClusterTrainingRuntime
		err = c.Get(ctx, types.NamespacedName{Name: ref.Name}, &rt)
		spec = rt.Spec
		rt.Name = ref.Name // also when it is not found: messages name it
		info.source = runtimeSource(&rt)
	default:
		var rt trainer.TrainingRuntime
		err = c.Get(ctx, types.NamespacedName{Namespace: job.Namespace, Name: ref.Name}, &rt)
		spec = rt.Spec
		rt.Namespace, rt.Name = job.Namespace, ref.Name
		info.source = runtimeSource(&rt)
	}
	if apierrors.IsNotFound(err) {
		return runtimeInfo{source: info.source}, nil
	}
	if err != nil {
		return runtimeInfo{}, fmt.Errorf("reading %s: %w", info.source.what, err)
	}
	info.found = true
	info.mpi = spec.MLPolicy != nil && spec.MLPolicy.MPI != nil
	return info, nil
}

// runtimeSource is rt (a ClusterTrainingRuntime or TrainingRuntime) as a source
// of settings: its annotations and the sshd port its template shows. Anything
// else is a source without settings.
func runtimeSource(rt client.Object) annotated {
	switch rt := rt.(type) {
	case *trainer.ClusterTrainingRuntime:
		return annotated{what: fmt.Sprintf("ClusterTrainingRuntime %q", rt.Name), annotations: rt.Annotations, sshPort: templateSSHPort(&rt.Spec)}
	case *trainer.TrainingRuntime:
		return annotated{what: fmt.Sprintf("TrainingRuntime %s/%s", rt.Namespace, rt.Name), annotations: rt.Annotations, sshPort: templateSSHPort(&rt.Spec)}
	}
	return annotated{what: "runtime"}
}

// templateSSHPort finds the port sshd listens on in the runtime's Worker pods: a
// port named "ssh" or "sshd" of the Worker's "node" container, else the TCP port
// its readiness probe checks (the Trainer's upstream MPI runtimes probe sshd on
// 2222, and mpiguard's template webhook asks MPI runtimes for such a probe).
// 0 when the template says neither.
func templateSSHPort(spec *trainer.TrainingRuntimeSpec) int32 {
	for _, rj := range spec.Template.Spec.ReplicatedJobs {
		if rj.Name != workerReplicatedJob {
			continue
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name != trainerconstants.Node {
				continue
			}
			for _, p := range c.Ports {
				if (p.Name == "ssh" || p.Name == "sshd") && p.ContainerPort > 0 {
					return p.ContainerPort
				}
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil {
				return 0
			}
			port := c.ReadinessProbe.TCPSocket.Port
			if port.Type == intstr.Int {
				if port.IntVal < 1 || port.IntVal > 65535 {
					return 0
				}
				return port.IntVal
			}
			for _, p := range c.Ports { // a named probe port
				if p.Name == port.StrVal {
					return p.ContainerPort
				}
			}
			return 0
		}
	}
	return 0
}
