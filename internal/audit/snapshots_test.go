package audit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// snapshotFixture is a job, its snapshot ConfigMap as the Trainer writes it,
// and a client that counts the GETs of ConfigMaps.
type snapshotFixture struct {
	job    *trainer.TrainJob
	cm     *corev1.ConfigMap
	client client.Client
	gets   *int
}

func newSnapshotFixture(t *testing.T, withSnapshot bool) snapshotFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	job := fixtures.TrainJob("team-a", "run", "mpi").Obj()
	job.UID, job.ResourceVersion = "job-uid", "10"
	rt := fixtures.MPIRuntime("mpi").Cluster()
	rt.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.ClusterTrainingRuntimeKind))
	data, err := yaml.Marshal(rt)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: pipeline.SnapshotName(job), OwnerReferences: []metav1.OwnerReference{{
			APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: job.Name, UID: job.UID, Controller: ptr.To(true),
		}}},
		Data: map[string]string{"runtime": string(data)},
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	if withSnapshot {
		b = b.WithObjects(cm.DeepCopy())
	}
	gets := 0
	c := interceptor.NewClient(b.Build(), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.ConfigMap); ok {
			gets++
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	return snapshotFixture{job: job, cm: cm, client: c, gets: &gets}
}

// TestSnapshotReadsRemembered: audit reads a job version's snapshot once per
// interval, and gives what a live read gives (pipeline.Snapshot).
func TestSnapshotReadsRemembered(t *testing.T) {
	ctx := context.Background()
	for _, withSnapshot := range []bool{false, true} {
		f := newSnapshotFixture(t, withSnapshot)
		now := time.Unix(1000, 0)
		s := newSnapshotReads(f.client, 10*time.Minute)
		s.now = func() time.Time { return now }

		want, wantErr := pipeline.Snapshot(ctx, f.client, f.job)
		*f.gets = 0
		check := func(step string, gets int) {
			t.Helper()
			got, err := s.Snapshot(ctx, f.job)
			if !errors.Is(err, wantErr) || (err != nil && err.Error() != wantErr.Error()) {
				t.Fatalf("snapshot %v, %s: error %v, want %v", withSnapshot, step, err, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("snapshot %v, %s: runtime (-live +remembered):\n%s", withSnapshot, step, diff)
			}
			if *f.gets != gets {
				t.Errorf("snapshot %v, %s: %d GETs, want %d", withSnapshot, step, *f.gets, gets)
			}
		}
		check("first read", 1)
		check("the same version again", 1)
		now = now.Add(9 * time.Minute)
		check("within the interval", 1)
		f.job.ResourceVersion = "11"
		check("the job changed", 2)
		now = now.Add(10 * time.Minute)
		check("the interval passed", 3)
	}
}

// TestSnapshotReadsCheckEachJob: two jobs with the same snapshot content
// share its parse, and each is checked as the Trainer checks it: a
// snapshot another job owns is refused with the Trainer's reason.
func TestSnapshotReadsCheckEachJob(t *testing.T) {
	ctx := context.Background()
	f := newSnapshotFixture(t, true)
	other := f.job.DeepCopy()
	other.Name, other.UID = "other", "other-uid"
	forged := f.cm.DeepCopy()
	forged.Name = pipeline.SnapshotName(other) // owned by f.job, named after other
	if err := f.client.Create(ctx, forged); err != nil {
		t.Fatal(err)
	}
	s := newSnapshotReads(f.client, time.Minute)
	first, err := s.Snapshot(ctx, f.job)
	if err != nil {
		t.Fatal(err)
	}
	parsedFirst := parsedContent(t, s, f.cm)
	_, err = s.Snapshot(ctx, other)
	if parsedContent(t, s, f.cm) != parsedFirst {
		t.Errorf("the same content was parsed again for another job")
	}
	var refused *pipeline.SnapshotError
	if !errors.As(err, &refused) || refused.Reason != "invalid runtime snapshot: a snapshot configmap exists but is owned by another object" {
		t.Fatalf("another job's snapshot: %v, want the Trainer's refusal", err)
	}
	if s.contents.Len() != 1 {
		t.Errorf("%d contents parsed, want 1 (both ConfigMaps hold the same data)", s.contents.Len())
	}
	first.SetName("modified by a caller")
	again, err := s.Snapshot(ctx, f.job)
	if err != nil || again.GetName() != "mpi" {
		t.Errorf("a caller's change reached what is remembered: %v, %v", again, err)
	}
}

// parsedContent returns the runtime s parsed from the snapshot data of cm.
func parsedContent(t *testing.T, s *snapshotReads, cm *corev1.ConfigMap) client.Object {
	t.Helper()
	v, ok := s.contents.Get(pipeline.SnapshotContent(cm.Data) + "/" + trainer.ClusterTrainingRuntimeKind)
	if !ok {
		t.Fatalf("the content of %s was not parsed", cm.Name)
	}
	return v.(pipeline.ParsedSnapshot).Runtime
}
