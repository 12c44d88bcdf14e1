package convert_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/convert"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/test/fixtures/mpioperator"
)

// Cases are the MPI Operator's own examples (testdata/upstream, v0.6.0) and
// the hand-written edge cases (testdata/edge), with the gang scheduler each
// was written for.
var Cases = map[string]string{
	"upstream/pi.yaml":                    convert.GangNone,
	"upstream/tensorflow-benchmarks.yaml": convert.GangNone,
	"upstream/tensorflow-mnist.yaml":      convert.GangNone,
	"edge/cpu-only.yaml":                  convert.GangNone,
	"edge/multi-gpu.yaml":                 convert.GangNone,
	"edge/suspended-queue.yaml":           convert.GangVolcano,
	"edge/curated-fit.yaml":               convert.GangNone,
}

// curated is the published curated set, as mpiguard convert reads it.
func curated(t *testing.T) []*trainer.ClusterTrainingRuntime {
	t.Helper()
	rts, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	return rts
}

func readCase(t *testing.T, name string) convert.Document {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs, err := convert.Read(name, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 {
		t.Fatalf("%s: %d MPIJobs, want 1", name, len(docs))
	}
	if len(docs[0].Unknown) > 0 {
		t.Fatalf("%s: unknown fields %v", name, docs[0].Unknown)
	}
	return docs[0]
}

// The converted TrainJob, rendered as the Trainer builds it (internal/render),
// has the Launcher and Worker counts, Slots per worker, hostfile, and per pod
// the image, command, args, resources, restart and scheduling fields the MPI
// Operator v0.6.0 gives the MPIJob's pods.
func TestConvertedJobsRenderAsTheMPIOperatorRunsThem(t *testing.T) {
	ctx := context.Background()
	r, err := render.NewRenderer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name, gang := range Cases {
		t.Run(name, func(t *testing.T) {
			doc := readCase(t, name)
			res, err := convert.Convert(doc.Job, nil, convert.Options{Gang: gang, Curated: curated(t)})
			if err != nil {
				t.Fatal(err)
			}
			var rt client.Object = res.Runtime
			if res.Runtime == nil {
				// A curated runtime fits: the TrainJob names it.
				i := slices.IndexFunc(curated(t), func(c *trainer.ClusterTrainingRuntime) bool { return c.Name == res.TrainJob.Spec.RuntimeRef.Name })
				if i < 0 {
					t.Fatalf("the TrainJob names %q, no curated runtime", res.TrainJob.Spec.RuntimeRef.Name)
				}
				rt = curated(t)[i]
			}
			view, err := r.Render(ctx, render.Input{TrainJob: res.TrainJob, Runtime: rt})
			if err != nil {
				t.Fatal(err)
			}
			want := mpioperator.Pods(doc.Job, gang)
			if view.Launcher == nil || view.Workers == nil {
				t.Fatalf("rendered no Launcher or no Workers: %+v", view.ReplicatedJobs)
			}
			got := mpioperator.Job{
				Launchers: view.Launcher.Pods, Workers: view.Workers.Pods,
				HostfileLines: int32(len(view.Hostfile)), Slots: view.SlotsPerWorker,
				Launcher: mpioperator.PodOf(view.Launcher.PodTemplate.Spec),
				Worker:   mpioperator.PodOf(view.Workers.PodTemplate.Spec),
			}
			if res.Runtime == nil {
				// The curated runtimes leave the pods' restart policy to JobSet.
				want.Launcher.RestartPolicy, want.Worker.RestartPolicy = "", ""
				got.Launcher.RestartPolicy, got.Worker.RestartPolicy = "", ""
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the Trainer would build (+) what the MPI Operator does not (-):\n%s", diff)
			}
			for _, line := range view.Hostfile {
				if !strings.HasSuffix(line, " slots="+strconv.Itoa(int(want.Slots))) {
					t.Errorf("hostfile line %q: want slots=%d", line, want.Slots)
				}
			}
		})
	}
}

const withUnknown = `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: typo
spec:
  slotPerWorker: 2
  runPolicy:
    cleanupPolicy: All
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
          - name: l
            image: x
            imagePullPolice: Always
    Worker:
      replicas: 1
      template:
        spec:
          containers:
          - name: w
            image: x
`

// A field convert does not know is named in a note, never dropped silently.
func TestUnknownFieldsAreReported(t *testing.T) {
	docs, err := convert.Read("typo.yaml", strings.NewReader(withUnknown))
	if err != nil {
		t.Fatal(err)
	}
	res, err := convert.Convert(docs[0].Job, docs[0].Unknown, convert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var unknown []string
	for _, n := range res.Notes {
		if n.Outcome == convert.Unknown {
			unknown = append(unknown, n.Field)
		}
	}
	slices.Sort(unknown)
	want := []string{
		"spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].imagePullPolice",
		"spec.runPolicy.cleanupPolicy",
		"spec.slotPerWorker",
	}
	if diff := cmp.Diff(want, unknown); diff != "" {
		t.Errorf("unknown fields reported (-want +got):\n%s", diff)
	}
}

// Every field of the MPIJob that convert reads gets a note: mapped, differs
// or no equivalent.
func TestEveryFieldReadIsAccountedFor(t *testing.T) {
	for name, gang := range Cases {
		doc := readCase(t, name)
		res, err := convert.Convert(doc.Job, nil, convert.Options{Gang: gang, Curated: curated(t)})
		if err != nil {
			t.Fatal(err)
		}
		noted := map[string]bool{}
		for _, n := range res.Notes {
			noted[n.Field] = true
		}
		js := doc.Job
		want := []string{"runtime", "spec.slotsPerWorker", "spec.mpiImplementation", "spec.sshAuthMountPath", "spec.runLauncherAsWorker", "spec.launcherCreationPolicy", "spec.mpiReplicaSpecs.Worker.replicas", "spec.mpiReplicaSpecs.Launcher.replicas", "hostfile", "OMPI_MCA_*"}
		rp := js.Spec.RunPolicy
		for field, set := range map[string]bool{
			"spec.runPolicy.backoffLimit":                   rp.BackoffLimit != nil,
			"spec.runPolicy.activeDeadlineSeconds":          rp.ActiveDeadlineSeconds != nil,
			"spec.runPolicy.cleanPodPolicy":                 rp.CleanPodPolicy != nil,
			"spec.runPolicy.ttlSecondsAfterFinished":        rp.TTLSecondsAfterFinished != nil,
			"spec.runPolicy.suspend":                        rp.Suspend != nil,
			"spec.runPolicy.schedulingPolicy.queue":         rp.SchedulingPolicy != nil && rp.SchedulingPolicy.Queue != "",
			"spec.runPolicy.schedulingPolicy.minAvailable":  rp.SchedulingPolicy != nil && rp.SchedulingPolicy.MinAvailable != nil,
			"spec.runPolicy.schedulingPolicy.priorityClass": rp.SchedulingPolicy != nil && rp.SchedulingPolicy.PriorityClass != "",
		} {
			if set {
				want = append(want, field)
			}
		}
		for _, f := range want {
			if !noted[f] {
				t.Errorf("%s: no note on %s", name, f)
			}
		}
	}
}

func TestMPIJobsTheTrainerCannotRunAreRefused(t *testing.T) {
	for name, tc := range map[string]struct{ doc, field string }{
		"no Workers":   {strings.Replace(withUnknown, "replicas: 1", "replicas: 0", 1), "spec.mpiReplicaSpecs.Worker.replicas"},
		"no Launcher":  {strings.Replace(withUnknown, "Launcher:", "Launchr:", 1), "spec.mpiReplicaSpecs.Launchr"},
		"Intel? no, X": {strings.Replace(withUnknown, "spec:\n  slotPerWorker", "spec:\n  mpiImplementation: X\n  slotPerWorker", 1), "spec.mpiImplementation"},
	} {
		docs, err := convert.Read(name, strings.NewReader(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		_, err = convert.Convert(docs[0].Job, nil, convert.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: got %v, want an error naming %s", name, err, tc.field)
		}
	}
	if _, err := convert.Read("job.yaml", strings.NewReader("apiVersion: kubeflow.org/v1\nkind: MPIJob\nmetadata: {name: old}\n")); err == nil || !strings.Contains(err.Error(), "kubeflow.org/v2beta1") {
		t.Errorf("a v1 MPIJob: got %v, want an error naming the version convert reads", err)
	}
}

// Only an MPIJob a curated runtime really fits is pointed at it: the
// upstream examples (their Launcher runs no ranks) get a runtime of their own.
func TestCuratedRuntimeOnlyWhenItFits(t *testing.T) {
	for name := range Cases {
		doc := readCase(t, name)
		res, err := convert.Convert(doc.Job, nil, convert.Options{Curated: curated(t)})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.Runtime == nil, name == "edge/curated-fit.yaml"; got != want {
			t.Errorf("%s: names a curated runtime: %t, want %t (%s)", name, got, want, res.TrainJob.Spec.RuntimeRef.Name)
		}
	}
	doc := readCase(t, "edge/curated-fit.yaml")
	doc.Job.Spec.MPIReplicaSpecs[convert.Worker].Template.Spec.NodeSelector = map[string]string{"pool": "a"}
	res, err := convert.Convert(doc.Job, nil, convert.Options{Curated: curated(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runtime == nil {
		t.Errorf("a Worker with a nodeSelector still names curated runtime %s; its pods would lose the node selection", res.TrainJob.Spec.RuntimeRef.Name)
	}
}
