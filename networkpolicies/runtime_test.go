package networkpolicies

import (
	"testing"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func runtimeWith(job string, c corev1.Container) *trainer.TrainingRuntimeSpec {
	return &trainer.TrainingRuntimeSpec{Template: trainer.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: job,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{c}},
			}}},
		}},
	}}}
}

func tcpProbe(port intstr.IntOrString) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: port}}}
}

func TestTemplateSSHPort(t *testing.T) {
	cases := map[string]struct {
		spec *trainer.TrainingRuntimeSpec
		want int32
	}{
		"upstream runtime: readiness probe on sshd": {
			spec: runtimeWith("node", corev1.Container{Name: "node", ReadinessProbe: tcpProbe(intstr.FromInt32(2222))}),
			want: 2222,
		},
		"port named ssh wins over the probe": {
			spec: runtimeWith("node", corev1.Container{Name: "node",
				Ports:          []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}, {Name: "ssh", ContainerPort: 22}},
				ReadinessProbe: tcpProbe(intstr.FromInt32(8080))}),
			want: 22,
		},
		"probe on a named port": {
			spec: runtimeWith("node", corev1.Container{Name: "node",
				Ports:          []corev1.ContainerPort{{Name: "daemon", ContainerPort: 2022}},
				ReadinessProbe: tcpProbe(intstr.FromString("daemon"))}),
			want: 2022,
		},
		"probe on an unknown named port": {
			spec: runtimeWith("node", corev1.Container{Name: "node", ReadinessProbe: tcpProbe(intstr.FromString("nope"))}),
		},
		"exec probe says nothing": {
			spec: runtimeWith("node", corev1.Container{Name: "node", ReadinessProbe: &corev1.Probe{
				ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}),
		},
		"only the Worker's node container counts": {
			spec: runtimeWith("launcher", corev1.Container{Name: "node", ReadinessProbe: tcpProbe(intstr.FromInt32(2222))}),
		},
		"another container of the Worker does not count": {
			spec: runtimeWith("node", corev1.Container{Name: "sidecar", Ports: []corev1.ContainerPort{{Name: "ssh", ContainerPort: 22}}}),
		},
		"no template": {spec: &trainer.TrainingRuntimeSpec{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := templateSSHPort(tc.spec); got != tc.want {
				t.Errorf("templateSSHPort = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRuntimeKey(t *testing.T) {
	job := func(group, kind *string) *trainer.TrainJob {
		return &trainer.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "pi"},
			Spec:       trainer.TrainJobSpec{RuntimeRef: trainer.RuntimeRef{Name: "mpi", APIGroup: group, Kind: kind}},
		}
	}
	cases := map[string]struct {
		job  *trainer.TrainJob
		want string
	}{
		"defaults: ClusterTrainingRuntime":   {job: job(nil, nil), want: "ClusterTrainingRuntime/mpi"},
		"explicit ClusterTrainingRuntime":    {job: job(ptr.To("trainer.kubeflow.org"), ptr.To("ClusterTrainingRuntime")), want: "ClusterTrainingRuntime/mpi"},
		"TrainingRuntime in the namespace":   {job: job(nil, ptr.To("TrainingRuntime")), want: "TrainingRuntime/team-a/mpi"},
		"another API group is not a runtime": {job: job(ptr.To("example.com"), ptr.To("TrainingRuntime")), want: ""},
		"unknown kind":                       {job: job(nil, ptr.To("Runtime")), want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := runtimeKey(tc.job); got != tc.want {
				t.Errorf("runtimeKey = %q, want %q", got, tc.want)
			}
		})
	}
}
