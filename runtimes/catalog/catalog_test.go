package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func TestDecodeRejectsUnknownFields(t *testing.T) {
	cases := map[string]struct {
		yaml    string
		wantErr string
	}{
		"unknown field deep in the pod template": {
			yaml: `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: x}
spec:
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      imagePullPolicyy: Always
`,
			wantErr: `unknown field "spec.template.spec.replicatedJobs[0].template.spec.template.spec.containers[0].imagePullPolicyy"`,
		},
		"wrong kind": {
			yaml:    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainingRuntime\nmetadata: {name: x}\n",
			wantErr: "apiVersion/kind is trainer.kubeflow.org/v1alpha1/TrainingRuntime",
		},
		"no name": {
			yaml:    "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: ClusterTrainingRuntime\n",
			wantErr: "metadata.name is empty",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode() error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestEveryTemplateDecodesStrictly(t *testing.T) {
	tpls, err := Templates()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, tpl := range tpls {
		files = append(files, tpl.File)
	}
	want := []string{"deepspeed-v1.yaml", "intelmpi-v1.yaml", "mpich-v1.yaml", "openmpi-v1.yaml", "openmpi-v2.yaml"}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("embedded templates (-want +got):\n%s", diff)
	}
}

func TestPublishedNames(t *testing.T) {
	rts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"mpiguard-deepspeed", "mpiguard-deepspeed-coscheduling", "mpiguard-deepspeed-v1", "mpiguard-deepspeed-v1-coscheduling", "mpiguard-deepspeed-v1-volcano", "mpiguard-deepspeed-volcano",
		"mpiguard-intelmpi", "mpiguard-intelmpi-coscheduling", "mpiguard-intelmpi-v1", "mpiguard-intelmpi-v1-coscheduling", "mpiguard-intelmpi-v1-volcano", "mpiguard-intelmpi-volcano",
		"mpiguard-mpich", "mpiguard-mpich-coscheduling", "mpiguard-mpich-v1", "mpiguard-mpich-v1-coscheduling", "mpiguard-mpich-v1-volcano", "mpiguard-mpich-volcano",
		"mpiguard-openmpi", "mpiguard-openmpi-coscheduling", "mpiguard-openmpi-v1", "mpiguard-openmpi-v1-coscheduling", "mpiguard-openmpi-v1-volcano",
		"mpiguard-openmpi-v2", "mpiguard-openmpi-v2-coscheduling", "mpiguard-openmpi-v2-volcano", "mpiguard-openmpi-volcano",
	}
	if diff := cmp.Diff(want, Names(rts)); diff != "" {
		t.Errorf("published runtimes (-want +got):\n%s", diff)
	}
}

func TestVersionsAndAliases(t *testing.T) {
	rts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*trainer.ClusterTrainingRuntime{}
	for _, rt := range rts {
		byName[rt.Name] = rt
	}
	cases := map[string]struct {
		deprecated bool
		aliasOf    string
	}{
		"mpiguard-openmpi-v1":           {deprecated: true},
		"mpiguard-openmpi-v1-volcano":   {deprecated: true},
		"mpiguard-openmpi-v2":           {},
		"mpiguard-openmpi":              {aliasOf: "mpiguard-openmpi-v2"},
		"mpiguard-openmpi-volcano":      {aliasOf: "mpiguard-openmpi-v2-volcano"},
		"mpiguard-openmpi-coscheduling": {aliasOf: "mpiguard-openmpi-v2-coscheduling"},
		"mpiguard-mpich":                {aliasOf: "mpiguard-mpich-v1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rt := byName[name]
			if rt == nil {
				t.Fatalf("%s not published", name)
			}
			if got := rt.Labels[trainerconstants.LabelSupport] == trainerconstants.SupportDeprecated; got != tc.deprecated {
				t.Errorf("deprecated = %v, want %v", got, tc.deprecated)
			}
			if got := rt.Annotations[AnnotationAliasOf]; got != tc.aliasOf {
				t.Errorf("alias-of = %q, want %q", got, tc.aliasOf)
			}
			if tc.aliasOf != "" {
				target := byName[tc.aliasOf]
				if diff := cmp.Diff(target.Spec, rt.Spec); diff != "" {
					t.Errorf("alias spec differs from %s (-target +alias):\n%s", tc.aliasOf, diff)
				}
			}
		})
	}
}

// TestPractices checks, on every published runtime, the practices the upstream
// issues taught (see docs/runtimes.md).
func TestPractices(t *testing.T) {
	rts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range rts {
		t.Run(rt.Name, func(t *testing.T) {
			checkPractices(t, rt)
		})
	}
}

func checkPractices(t *testing.T, rt *trainer.ClusterTrainingRuntime) {
	t.Helper()
	spec := rt.Spec
	if spec.MLPolicy == nil || spec.MLPolicy.MPI == nil {
		t.Fatalf("no mlPolicy.mpi")
	}
	if got := *spec.MLPolicy.MPI.MPIImplementation; got != trainer.MPIImplementationOpenMPI {
		t.Errorf("mpiImplementation = %q, the Trainer CRD only accepts OpenMPI", got)
	}
	if got := *spec.MLPolicy.NumNodes; got != 1 {
		t.Errorf("mlPolicy.numNodes = %d, want 1 (the launcher is ancestor-labelled)", got)
	}
	// With the ancestor label on the launcher, the Trainer (v2.3) merges
	// TrainJob.spec.trainer.resourcesPerNode into the node job only when the
	// launcher runs as a node: without it, Workers could not be sized at all.
	if spec.MLPolicy.MPI.RunLauncherAsNode == nil || !*spec.MLPolicy.MPI.RunLauncherAsNode {
		t.Errorf("mlPolicy.mpi.runLauncherAsNode is not true: resourcesPerNode would reach the launcher only, never the Workers")
	}
	impl := rt.Labels[LabelMPIImplementation]
	if impl != ImplementationOpenMPI && impl != ImplementationIntel && impl != ImplementationMPICH {
		t.Errorf("label %s = %q", LabelMPIImplementation, impl)
	}
	var names []string
	for _, rj := range spec.Template.Spec.ReplicatedJobs {
		names = append(names, rj.Name)
	}
	if diff := cmp.Diff([]string{"node", "launcher"}, names); diff != "" {
		t.Fatalf("replicated jobs (-want +got):\n%s", diff)
	}
	worker, launcher := spec.Template.Spec.ReplicatedJobs[0], spec.Template.Spec.ReplicatedJobs[1]
	for _, rj := range []jobsetv1alpha2.ReplicatedJob{worker, launcher} {
		if rj.Replicas != 1 {
			t.Errorf("%s replicas = %d, want 1", rj.Name, rj.Replicas)
		}
		pod := rj.Template.Spec.Template
		if c := nodeContainer(pod.Spec); c == nil {
			t.Errorf("%s has no container named node", rj.Name)
		}
		if pod.Labels["sidecar.istio.io/inject"] != "false" || pod.Labels["istio.io/dataplane-mode"] != "none" {
			t.Errorf("%s pod template lacks the Istio sidecar and ambient opt-out: %v", rj.Name, pod.Labels)
		}
		if rj.Template.Spec.ActiveDeadlineSeconds != nil || pod.Spec.ActiveDeadlineSeconds != nil {
			t.Errorf("%s sets activeDeadlineSeconds", rj.Name)
		}
		wantScheduler := map[string]string{"": "", GangVolcano: VolcanoSchedulerName, GangCoscheduling: CoschedulingSchedulerName}[rt.Labels[LabelGangScheduler]]
		if pod.Spec.SchedulerName != wantScheduler {
			t.Errorf("%s schedulerName = %q, want %q", rj.Name, pod.Spec.SchedulerName, wantScheduler)
		}
	}
	if _, ok := worker.Template.Labels[trainerconstants.LabelTrainJobAncestor]; ok {
		t.Errorf("the Worker job carries the ancestor label: only the launcher may")
	}
	if got := launcher.Template.Labels[trainerconstants.LabelTrainJobAncestor]; got != trainerconstants.AncestorTrainer {
		t.Errorf("launcher ancestor label = %q, want trainer", got)
	}
	if c := nodeContainer(worker.Template.Spec.Template.Spec); c != nil && (c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil) {
		t.Errorf("the Worker has no sshd readiness probe")
	}
	if diff := cmp.Diff([]jobsetv1alpha2.DependsOn{{Name: "node", Status: jobsetv1alpha2.DependencyReady}}, launcher.DependsOn); diff != "" {
		t.Errorf("launcher must wait for Workers to be Ready (-want +got):\n%s", diff)
	}
	script := strings.Join(nodeContainer(launcher.Template.Spec.Template.Spec).Command, " ")
	switch impl {
	case ImplementationOpenMPI:
		if !strings.Contains(script, `mpirun --hostfile "$hostfile"`) || !strings.Contains(script, "hostfile=/etc/mpi/hostfile") {
			t.Errorf("OpenMPI launcher does not pass --hostfile /etc/mpi/hostfile explicitly (OpenMPI 5 would run on one node): %s", script)
		}
	default:
		if !strings.Contains(script, `print h ":" s[2]`) || !strings.Contains(script, "mpirun -f /tmp/mpiguard/hostfile") {
			t.Errorf("%s launcher does not convert the hostfile to host:N and pass it with -f: %s", impl, script)
		}
		// Over SSH, Hydra hangs without these (test/mpi, TestLauncherScripts).
		if !strings.Contains(script, "self=$(hostname)") || !strings.Contains(script, `-localhost "$fqdn"`) {
			t.Errorf("%s launcher does not name its own hostfile line by its hostname and pass -localhost with its FQDN (Hydra would ssh to the launcher itself, and the Workers' proxies could not call back): %s", impl, script)
		}
	}
	switch rt.Labels[LabelGangScheduler] {
	case GangVolcano:
		if spec.PodGroupPolicy == nil || spec.PodGroupPolicy.Volcano == nil || spec.PodGroupPolicy.Coscheduling != nil {
			t.Errorf("volcano variant podGroupPolicy = %+v", spec.PodGroupPolicy)
		}
		if spec.Template.Annotations[VolcanoQueueAnnotation] == "" {
			t.Errorf("volcano variant has no queue annotation")
		}
	case GangCoscheduling:
		if spec.PodGroupPolicy == nil || spec.PodGroupPolicy.Coscheduling == nil || spec.PodGroupPolicy.Volcano != nil {
			t.Errorf("coscheduling variant podGroupPolicy = %+v", spec.PodGroupPolicy)
		}
	default:
		if spec.PodGroupPolicy != nil {
			t.Errorf("plain variant has a podGroupPolicy")
		}
	}
}

func nodeContainer(spec corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == trainerconstants.Node {
			return &spec.Containers[i]
		}
	}
	return nil
}
