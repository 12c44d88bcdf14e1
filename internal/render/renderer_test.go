package render

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
)

const (
	reqMissing = "cpu,memory"
	nodeRJ     = "spec.replicatedJobs[node].template.spec.template.spec"
	launcherRJ = "spec.replicatedJobs[launcher].template.spec.template.spec"
)

var cpuMem = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

func limitRange(name string, item corev1.LimitRangeItem) corev1.LimitRange {
	item.Type = corev1.LimitTypeContainer
	return corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
	}
}

// renderCase is a runtime and TrainJob pair with what the JobView must say.
type renderCase struct {
	runtime        client.Object
	trainJob       *trainer.TrainJob
	limitRanges    []corev1.LimitRange
	runtimeClasses []nodev1.RuntimeClass
	want           summary
}

// renderCases are built fresh for every test: tests default and render them.
func renderCases() map[string]renderCase {
	return map[string]renderCase{
		"launcher is not a node: numNodes workers, hostfile lists only workers": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(3)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 3, SlotsPerWorker: 1,
				Hostfile: hosts("node", 3, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 3, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 4,
			},
		},
		"launcher is a node: numNodes-1 workers, launcher on the hostfile": {
			runtime:  mpiRuntime(launcherAsNode(true)),
			trainJob: trainJob(numNodes(3)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 3, SlotsPerWorker: 1,
				Hostfile: append(hosts("node", 2, 1), "job-launcher-0-0.job slots=1"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 3,
			},
		},
		"launcher is a node, numNodes 1: still one worker": {
			runtime:  mpiRuntime(launcherAsNode(true)),
			trainJob: trainJob(numNodes(1)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: append(hosts("node", 1, 1), "job-launcher-0-0.job slots=1"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 2,
			},
		},
		"numNodes 1: one worker": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(1)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 2,
			},
		},
		"numNodes 0: no workers, empty hostfile, slots from the launcher's env": {
			runtime:  mpiRuntime(runtimeProcPerNode(2)),
			trainJob: trainJob(numNodes(0)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 0, SlotsPerWorker: 2,
				Hostfile: []string{},
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 0, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 1,
			},
		},
		"numNodes unset: the runtime's numNodes": {
			runtime:  mpiRuntime(func(s *trainer.TrainingRuntimeSpec) { s.MLPolicy.NumNodes = ptr.To[int32](2) }),
			trainJob: trainJob(),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					// Without trainer.numNodes the MPI plugin keeps the node job's own
					// parallelism (1); the ancestor-labelled launcher follows mlPolicy.numNodes.
					{Name: "node", Role: RoleWorker, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 2, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 3,
			},
		},
		"resourcesPerNode merged key by key: the runtime's memory request survives": {
			runtime: mpiRuntime(launcherAsNode(true),
				containerResources("node", rl("memory=32Gi"), nil),
				containerResources("launcher", rl("memory=32Gi"), nil)),
			trainJob: trainJob(numNodes(3), resourcesPerNode(nil, rl("cpu=8", "nvidia.com/gpu=4"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 3,
				SlotsPerWorker: 4, GPUsPerWorker: 4,
				Hostfile: append(hosts("node", 2, 4), "job-launcher-0-0.job slots=4"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests:      map[string]string{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"},
						Limits:        map[string]string{"cpu": "8", "nvidia.com/gpu": "4"},
						MissingLimits: []corev1.ResourceName{"memory"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests:      map[string]string{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"},
						Limits:        map[string]string{"cpu": "8", "nvidia.com/gpu": "4"},
						MissingLimits: []corev1.ResourceName{"memory"}},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "24", "memory": "96Gi", "nvidia.com/gpu": "12"},
				TotalLimits:   map[string]string{"cpu": "24", "nvidia.com/gpu": "12"},
			},
		},
		"launcher is not a node: resourcesPerNode go to the ancestor-labelled launcher, workers keep the runtime's": {
			runtime:  mpiRuntime(containerResources("node", rl("cpu=2", "memory=4Gi"), rl("cpu=2", "memory=4Gi"))),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=8", "memory=16Gi", "nvidia.com/gpu=4"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 4, GPUsPerWorker: 0,
				Hostfile: hosts("node", 2, 4),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests: map[string]string{"cpu": "2", "memory": "4Gi"},
						Limits:   map[string]string{"cpu": "2", "memory": "4Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"},
						Limits:   map[string]string{"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"}},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "12", "memory": "24Gi", "nvidia.com/gpu": "4"},
				TotalLimits:   map[string]string{"cpu": "12", "memory": "24Gi", "nvidia.com/gpu": "4"},
			},
		},
		"merged memory request above the TrainJob's memory limit: invalid pods": {
			runtime:  mpiRuntime(launcherAsNode(true), containerResources("node", rl("memory=32Gi"), nil)),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=4", "memory=16Gi"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: append(hosts("node", 1, 1), "job-launcher-0-0.job slots=1"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "4", "memory": "32Gi"},
						Limits:   map[string]string{"cpu": "4", "memory": "16Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "4", "memory": "16Gi"},
						Limits:   map[string]string{"cpu": "4", "memory": "16Gi"}},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "8", "memory": "48Gi"},
				TotalLimits:   map[string]string{"cpu": "8", "memory": "32Gi"},
				Problems:      []string{"FieldValueInvalid " + nodeRJ + ".containers[node].resources.requests[memory]"},
			},
		},
		"GPU requested without a limit, GPU request unequal to its limit: invalid pods": {
			runtime: mpiRuntime(launcherAsNode(true),
				containerResources("node", rl("nvidia.com/gpu=1"), nil),
				containerResources("launcher", nil, rl("nvidia.com/gpu=1"))),
			trainJob: trainJob(numNodes(2), resourcesPerNode(rl("cpu=1"), nil)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 2, SlotsPerWorker: 1, GPUsPerWorker: 1,
				Hostfile: append(hosts("node", 1, 1), "job-launcher-0-0.job slots=1"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests:        map[string]string{"cpu": "1", "nvidia.com/gpu": "1"},
						MissingRequests: []corev1.ResourceName{"memory"}, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests:        map[string]string{"cpu": "1", "nvidia.com/gpu": "1"},
						Limits:          map[string]string{"nvidia.com/gpu": "1"},
						MissingRequests: []corev1.ResourceName{"memory"}, MissingLimits: cpuMem},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "2", "nvidia.com/gpu": "2"},
				TotalLimits:   map[string]string{"nvidia.com/gpu": "1"},
				Problems:      []string{"FieldValueRequired " + nodeRJ + ".containers[node].resources.limits[nvidia.com/gpu]"},
			},
		},
		"resource name without vendor prefix: invalid pods": {
			runtime:  mpiRuntime(ancestorOn("node")),
			trainJob: trainJob(numNodes(1), resourcesPerNode(nil, rl("cpu=1", "memory=1Gi", "gpu=1"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1, GPUsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "1", "memory": "1Gi", "gpu": "1"}, Limits: map[string]string{"cpu": "1", "memory": "1Gi", "gpu": "1"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "1", "memory": "1Gi", "gpu": "1"},
				TotalLimits:   map[string]string{"cpu": "1", "memory": "1Gi", "gpu": "1"},
				Problems:      []string{"FieldValueInvalid " + nodeRJ + ".containers[node].resources.limits[gpu]"},
			},
		},
		"limits only: requests default to limits": {
			runtime:  mpiRuntime(launcherAsNode(true)),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=4", "memory=8Gi"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: append(hosts("node", 1, 1), "job-launcher-0-0.job slots=1"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "4", "memory": "8Gi"},
						Limits:   map[string]string{"cpu": "4", "memory": "8Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "4", "memory": "8Gi"},
						Limits:   map[string]string{"cpu": "4", "memory": "8Gi"}},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "8", "memory": "16Gi"},
				TotalLimits:   map[string]string{"cpu": "8", "memory": "16Gi"},
			},
		},
		"init container larger than the app containers: max rule": {
			runtime: mpiRuntime(
				containerResources("node", rl("cpu=4", "memory=8Gi"), nil),
				initContainers("node", corev1.Container{Name: "prep", Image: "prep", Resources: corev1.ResourceRequirements{
					Requests: rl("cpu=16", "memory=1Gi")}})),
			trainJob: trainJob(numNodes(2)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 2, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests:      map[string]string{"cpu": "16", "memory": "8Gi"},
						MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "32", "memory": "16Gi"},
			},
		},
		"sidecar (restartable init container) adds to the app containers": {
			runtime: mpiRuntime(
				containerResources("node", rl("cpu=4", "memory=8Gi"), rl("cpu=4", "memory=8Gi")),
				initContainers("node", corev1.Container{Name: "proxy", Image: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Resources: corev1.ResourceRequirements{Requests: rl("cpu=1", "memory=1Gi"), Limits: rl("cpu=1", "memory=1Gi")}})),
			trainJob: trainJob(numNodes(1)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "5", "memory": "9Gi"},
						Limits:   map[string]string{"cpu": "5", "memory": "9Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "5", "memory": "9Gi"},
				TotalLimits:   map[string]string{"cpu": "5", "memory": "9Gi"},
			},
		},
		"pod-level resources: pod requests default from containers, then from pod limits": {
			runtime: mpiRuntime(ancestorOn("node"),
				containerResources("node", rl("cpu=2"), nil),
				podResources("node", nil, rl("cpu=8", "memory=16Gi"))),
			trainJob: trainJob(numNodes(2)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 2, 1),
				ReplicatedJobs: []rjSummary{
					// With pod-level resources the quota does not require container values.
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests: map[string]string{"cpu": "2", "memory": "16Gi"},
						Limits:   map[string]string{"cpu": "8", "memory": "16Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "4", "memory": "32Gi"},
				TotalLimits:   map[string]string{"cpu": "16", "memory": "32Gi"},
			},
		},
		"LimitRange defaults fill missing requests and limits": {
			runtime:  mpiRuntime(containerResources("node", nil, rl("cpu=8"))),
			trainJob: trainJob(numNodes(2)),
			limitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{
				Default:        rl("cpu=2", "memory=4Gi"),
				DefaultRequest: rl("cpu=1", "memory=2Gi"),
			})},
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 2, 1),
				ReplicatedJobs: []rjSummary{
					// The container's own cpu limit wins; its request defaults to that limit
					// before LimitRanger runs, so defaultRequest does not apply to cpu.
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests: map[string]string{"cpu": "8", "memory": "2Gi"},
						Limits:   map[string]string{"cpu": "8", "memory": "4Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "1", "memory": "2Gi"},
						Limits:   map[string]string{"cpu": "2", "memory": "4Gi"}},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "17", "memory": "6Gi"},
				TotalLimits:   map[string]string{"cpu": "18", "memory": "12Gi"},
			},
		},
		"LimitRange with only a default limit: the apiserver defaults defaultRequest to it": {
			runtime:     mpiRuntime(),
			trainJob:    trainJob(numNodes(1)),
			limitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{Default: rl("cpu=500m")})},
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "500m"}, Limits: map[string]string{"cpu": "500m"},
						MissingRequests: []corev1.ResourceName{"memory"}, MissingLimits: []corev1.ResourceName{"memory"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "500m"}, Limits: map[string]string{"cpu": "500m"},
						MissingRequests: []corev1.ResourceName{"memory"}, MissingLimits: []corev1.ResourceName{"memory"}},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "1"},
				TotalLimits:   map[string]string{"cpu": "1"},
			},
		},
		"LimitRange max below the merged limit: invalid pods": {
			runtime:     mpiRuntime(launcherAsNode(true)),
			trainJob:    trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=8", "memory=1Gi"))),
			limitRanges: []corev1.LimitRange{limitRange("max", corev1.LimitRangeItem{Max: rl("cpu=4")})},
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: append(hosts("node", 1, 1), "job-launcher-0-0.job slots=1"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "8", "memory": "1Gi"}, Limits: map[string]string{"cpu": "8", "memory": "1Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "8", "memory": "1Gi"}, Limits: map[string]string{"cpu": "8", "memory": "1Gi"}},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "16", "memory": "2Gi"},
				TotalLimits:   map[string]string{"cpu": "16", "memory": "2Gi"},
				Problems: []string{
					"FieldValueForbidden " + launcherRJ + ".containers[node].resources.limits[cpu]",
					"FieldValueForbidden " + nodeRJ + ".containers[node].resources.limits[cpu]",
				},
			},
		},
		"LimitRange default limit below the merged request: invalid pods after admission": {
			runtime:  mpiRuntime(ancestorOn("node")),
			trainJob: trainJob(numNodes(1), resourcesPerNode(rl("cpu=3"), nil)),
			limitRanges: []corev1.LimitRange{limitRange("defaults", corev1.LimitRangeItem{
				Default: rl("cpu=2", "memory=4Gi"), DefaultRequest: rl("cpu=1", "memory=2Gi"),
			})},
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"cpu": "3", "memory": "2Gi"}, Limits: map[string]string{"cpu": "2", "memory": "4Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "1", "memory": "2Gi"}, Limits: map[string]string{"cpu": "2", "memory": "4Gi"}},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"cpu": "4", "memory": "4Gi"},
				TotalLimits:   map[string]string{"cpu": "4", "memory": "8Gi"},
				Problems:      []string{"FieldValueInvalid " + nodeRJ + ".containers[node].resources.requests[cpu]"},
			},
		},
		"RuntimeClass overhead is charged": {
			runtime: mpiRuntime(runtimeClass("node", "kata"),
				containerResources("node", rl("cpu=1", "memory=1Gi"), rl("cpu=1", "memory=1Gi"))),
			trainJob: trainJob(numNodes(2)),
			runtimeClasses: []nodev1.RuntimeClass{{
				ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
				Overhead: &nodev1.Overhead{PodFixed: rl("cpu=250m", "memory=120Mi")},
			}},
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 2, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests: map[string]string{"cpu": "1250m", "memory": "1144Mi"},
						Limits:   map[string]string{"cpu": "1250m", "memory": "1144Mi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "2500m", "memory": "2288Mi"},
				TotalLimits:   map[string]string{"cpu": "2500m", "memory": "2288Mi"},
			},
		},
		"RuntimeClass that does not exist: invalid pods": {
			runtime:  mpiRuntime(runtimeClass("node", "gvisor")),
			trainJob: trainJob(numNodes(1)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods: 2,
				Problems:  []string{"FieldValueNotFound " + nodeRJ + ".runtimeClassName"},
			},
		},
		"launcher replicas 2, launcher not ancestor-labelled: two launcher pods": {
			runtime:  mpiRuntime(ancestorOn("node"), replicas("launcher", 2), containerResources("launcher", rl("cpu=1", "memory=1Gi"), nil)),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=4", "memory=4Gi"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 2, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2,
						Requests: map[string]string{"cpu": "4", "memory": "4Gi"}, Limits: map[string]string{"cpu": "4", "memory": "4Gi"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 2,
						Requests: map[string]string{"cpu": "1", "memory": "1Gi"}, MissingLimits: cpuMem},
				},
				TotalPods:     4,
				TotalRequests: map[string]string{"cpu": "10", "memory": "10Gi"},
				TotalLimits:   map[string]string{"cpu": "8", "memory": "8Gi"},
			},
		},
		"launcher replicas 2, ancestor-labelled launcher: the Trainer forces one replica": {
			runtime:  mpiRuntime(replicas("launcher", 2), containerResources("launcher", rl("cpu=1", "memory=1Gi"), nil)),
			trainJob: trainJob(numNodes(2)),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 1,
				Hostfile: hosts("node", 2, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"cpu": "1", "memory": "1Gi"}, MissingLimits: cpuMem},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "1", "memory": "1Gi"},
			},
		},
		"GPU-derived slots: runtime says 1, a node has 8 GPUs": {
			runtime:  mpiRuntime(launcherAsNode(true)),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("nvidia.com/gpu=8"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 2, SlotsPerWorker: 8, GPUsPerWorker: 8,
				Hostfile: append(hosts("node", 1, 8), "job-launcher-0-0.job slots=8"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"nvidia.com/gpu": "8"}, Limits: map[string]string{"nvidia.com/gpu": "8"},
						MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"nvidia.com/gpu": "8"}, Limits: map[string]string{"nvidia.com/gpu": "8"},
						MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"nvidia.com/gpu": "16"},
				TotalLimits:   map[string]string{"nvidia.com/gpu": "16"},
			},
		},
		"GPU-derived slots do not apply when the runtime says more than 1": {
			runtime:  mpiRuntime(launcherAsNode(true), runtimeProcPerNode(4)),
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("nvidia.com/gpu=8"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", RunLauncherAsNode: true, NumNodes: 2, SlotsPerWorker: 4, GPUsPerWorker: 8,
				Hostfile: append(hosts("node", 1, 4), "job-launcher-0-0.job slots=4"),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1,
						Requests: map[string]string{"nvidia.com/gpu": "8"}, Limits: map[string]string{"nvidia.com/gpu": "8"},
						MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"nvidia.com/gpu": "8"}, Limits: map[string]string{"nvidia.com/gpu": "8"},
						MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     2,
				TotalRequests: map[string]string{"nvidia.com/gpu": "16"},
				TotalLimits:   map[string]string{"nvidia.com/gpu": "16"},
			},
		},
		"TrainJob numProcPerNode wins over GPUs": {
			runtime:  mpiRuntime(),
			trainJob: trainJob(numNodes(2), procPerNode(2), resourcesPerNode(nil, rl("nvidia.com/gpu=8"))),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 2, SlotsPerWorker: 2, GPUsPerWorker: 0,
				Hostfile: hosts("node", 2, 2),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 2, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 1,
						Requests: map[string]string{"nvidia.com/gpu": "8"}, Limits: map[string]string{"nvidia.com/gpu": "8"},
						MissingRequests: cpuMem, MissingLimits: cpuMem},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"nvidia.com/gpu": "8"},
				TotalLimits:   map[string]string{"nvidia.com/gpu": "8"},
			},
		},
		"runtime patches apply in order and add node selectors": {
			runtime: mpiRuntime(),
			trainJob: trainJob(numNodes(1),
				nodeSelectorPatch("mpiguard.io/admission", map[string]string{"topology.kubernetes.io/region": "eu-west-1"}, "node", "launcher"),
				nodeSelectorPatch("example.com/scheduler", map[string]string{"topology.kubernetes.io/region": "eu-central-1", "pool": "a100"}, "node")),
			want: summary{
				MPI: true, MPIImplementation: "OpenMPI", NumNodes: 1, SlotsPerWorker: 1,
				Hostfile: hosts("node", 1, 1),
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem,
						NodeSelector: map[string]string{"topology.kubernetes.io/region": "eu-central-1", "pool": "a100"}},
					{Name: "launcher", Role: RoleLauncher, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem,
						NodeSelector: map[string]string{"topology.kubernetes.io/region": "eu-west-1"}},
				},
				TotalPods: 2,
			},
		},
		"non-MPI runtime: pods without MPI fields": {
			runtime: &trainer.ClusterTrainingRuntime{
				ObjectMeta: metav1.ObjectMeta{Name: "openmpi"},
				Spec: trainer.TrainingRuntimeSpec{
					MLPolicy: &trainer.MLPolicy{NumNodes: ptr.To[int32](1), MLPolicySource: trainer.MLPolicySource{Torch: &trainer.TorchMLPolicySource{}}},
					Template: mpiRuntime().Spec.Template,
				},
			},
			trainJob: trainJob(numNodes(2), resourcesPerNode(nil, rl("cpu=2", "memory=2Gi"))),
			want: summary{
				NumNodes: 2,
				ReplicatedJobs: []rjSummary{
					{Name: "node", Role: RoleWorker, Pods: 1, MissingRequests: cpuMem, MissingLimits: cpuMem},
					{Name: "launcher", Role: RoleLauncher, Pods: 2,
						Requests: map[string]string{"cpu": "2", "memory": "2Gi"}, Limits: map[string]string{"cpu": "2", "memory": "2Gi"}},
				},
				TotalPods:     3,
				TotalRequests: map[string]string{"cpu": "4", "memory": "4Gi"},
				TotalLimits:   map[string]string{"cpu": "4", "memory": "4Gi"},
			},
		},
	}
}

func TestRender(t *testing.T) {
	cases := renderCases()
	r := renderer(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			lrs := make([]corev1.LimitRange, len(tc.limitRanges))
			for i := range tc.limitRanges {
				lrs[i] = *tc.limitRanges[i].DeepCopy()
				if err := ApplyDefaults(&lrs[i]); err != nil {
					t.Fatal(err)
				}
			}
			if err := ApplyDefaults(tc.runtime, tc.trainJob); err != nil {
				t.Fatalf("ApplyDefaults: %v", err)
			}
			// Nothing Render is given may change: admission hands it the
			// informer cache's objects' copies and mpiguard check one runtime
			// for many TrainJobs.
			before := tc.trainJob.DeepCopy()
			runtimeBefore := tc.runtime.DeepCopyObject()
			lrsBefore := deepCopies(lrs)
			rcsBefore := deepCopies(tc.runtimeClasses)
			view, err := r.Render(context.Background(), Input{TrainJob: tc.trainJob, Runtime: tc.runtime, LimitRanges: lrs, RuntimeClasses: tc.runtimeClasses})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if diff := cmp.Diff(tc.want, summarize(view)); diff != "" {
				t.Errorf("JobView (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.trainJob); diff != "" {
				t.Errorf("Render modified the TrainJob (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(runtimeBefore, tc.runtime); diff != "" {
				t.Errorf("Render modified the runtime (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(lrsBefore, lrs); diff != "" {
				t.Errorf("Render modified the LimitRanges (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(rcsBefore, tc.runtimeClasses); diff != "" {
				t.Errorf("Render modified the RuntimeClasses (-before +after):\n%s", diff)
			}
			if view.Launcher != nil && view.Launcher.Name != constants.Launcher {
				t.Errorf("Launcher points to %q", view.Launcher.Name)
			}
		})
	}
}

// deepCopies copies a list of API objects, items included.
func deepCopies[T any, P interface {
	*T
	DeepCopy() P
}](items []T) []T {
	if items == nil {
		return nil
	}
	out := make([]T, len(items))
	for i := range items {
		out[i] = *P(&items[i]).DeepCopy()
	}
	return out
}
