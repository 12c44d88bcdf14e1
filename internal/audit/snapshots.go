package audit

import (
	"context"
	"fmt"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/pipeline"
)

// A waiting job is judged on the runtime snapshot the Trainer would build its
// resume from (internal/pipeline/snapshot.go). mpiguard may only get
// ConfigMaps by name outside its namespace, never list or watch them
// (docs/operations.md), so nothing tells it when a snapshot appears or
// changes: each read is a GET, one per waiting job, and a YAML parse of the
// runtime it holds, which in a full audit of many waiting jobs would be most
// of its time (BenchmarkAudit).
//
// So audit remembers what it read, per version of the job, for at most the
// audit interval: a job that changed (the Trainer's first reconcile, which
// takes the snapshot, writes the job's status), and every job once the
// interval has passed, is read again. A tenant's edit of a snapshot while
// nothing else changes is found by the namespace's interval audit, at the
// latest one interval later; the resume itself is judged on a live read at
// admission, whatever audit remembers.
const (
	// snapshotJobs bounds the jobs whose read is remembered: a larger
	// cluster reads the rest as before.
	snapshotJobs = 1 << 16
	// snapshotContents bounds the distinct snapshot contents kept parsed:
	// jobs created from the same runtime version have the same snapshot.
	snapshotContents = 256
)

// snapshotReads remembers the snapshots audit read.
type snapshotReads struct {
	live   client.Reader
	maxAge time.Duration
	now    func() time.Time

	mu       sync.Mutex
	jobs     *lru.Cache // jobVersion -> snapshotRead
	contents *lru.Cache // pipeline.SnapshotContent + "/" + kind -> pipeline.ParsedSnapshot
}

// jobVersion is one version of a stored job.
type jobVersion struct {
	uid             types.UID
	resourceVersion string
}

// snapshotRead is what a read found: no snapshot (meta nil), or the
// ConfigMap's metadata the Trainer checks and the key of its parsed content.
type snapshotRead struct {
	at      time.Time
	meta    *metav1.ObjectMeta
	content string
}

func newSnapshotReads(live client.Reader, maxAge time.Duration) *snapshotReads {
	return &snapshotReads{live: live, maxAge: maxAge, now: time.Now, jobs: lru.New(snapshotJobs), contents: lru.New(snapshotContents)}
}

// Snapshot returns job's runtime snapshot as pipeline.Snapshot does, from
// memory when this version of the job was read less than maxAge ago.
func (s *snapshotReads) Snapshot(ctx context.Context, job *trainer.TrainJob) (client.Object, error) {
	if job.UID == "" || job.ResourceVersion == "" {
		return pipeline.Snapshot(ctx, s.live, job)
	}
	kind, err := pipeline.SnapshotKind(job)
	if err != nil {
		return nil, err
	}
	key := jobVersion{job.UID, job.ResourceVersion}
	read, parsed, ok := s.remembered(key, kind)
	if !ok {
		var data map[string]string
		if read, data, err = s.read(ctx, job); err != nil {
			return nil, err
		}
		parsed = s.remember(key, read, data, kind)
	}
	if read.meta == nil {
		return nil, nil
	}
	return pipeline.CheckSnapshot(job, read.meta, parsed)
}

func (s *snapshotReads) remembered(key jobVersion, kind string) (snapshotRead, pipeline.ParsedSnapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.jobs.Get(key)
	if !ok {
		return snapshotRead{}, pipeline.ParsedSnapshot{}, false
	}
	read := v.(snapshotRead)
	if s.now().Sub(read.at) >= s.maxAge {
		return snapshotRead{}, pipeline.ParsedSnapshot{}, false
	}
	if read.meta == nil {
		return read, pipeline.ParsedSnapshot{}, true
	}
	p, ok := s.contents.Get(read.content + "/" + kind)
	if !ok {
		return snapshotRead{}, pipeline.ParsedSnapshot{}, false
	}
	return read, p.(pipeline.ParsedSnapshot), true
}

// read gets job's snapshot from the apiserver: what to remember of it, and
// its data.
func (s *snapshotReads) read(ctx context.Context, job *trainer.TrainJob) (snapshotRead, map[string]string, error) {
	at := s.now()
	cm := &corev1.ConfigMap{}
	err := s.live.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: pipeline.SnapshotName(job)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return snapshotRead{at: at}, nil, nil
	case err != nil:
		return snapshotRead{}, nil, fmt.Errorf("reading the runtime snapshot ConfigMap %s/%s: %w", job.Namespace, pipeline.SnapshotName(job), err)
	}
	// Only what the Trainer's checks read is kept of the ConfigMap.
	meta := &metav1.ObjectMeta{Namespace: cm.Namespace, Name: cm.Name}
	if owner := metav1.GetControllerOfNoCopy(cm); owner != nil {
		meta.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return snapshotRead{at: at, meta: meta, content: pipeline.SnapshotContent(cm.Data)}, cm.Data, nil
}

// remember keeps read for key and returns the parsed content of data: parsed
// only when no other job's snapshot had the same content (a job's first read
// is then a GET, not also a YAML parse).
func (s *snapshotReads) remember(key jobVersion, read snapshotRead, data map[string]string, kind string) pipeline.ParsedSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs.Add(key, read)
	if read.meta == nil {
		return pipeline.ParsedSnapshot{}
	}
	if p, ok := s.contents.Get(read.content + "/" + kind); ok {
		return p.(pipeline.ParsedSnapshot)
	}
	parsed := pipeline.ParseSnapshot(data, kind)
	s.contents.Add(read.content+"/"+kind, parsed)
	return parsed
}

// snapshotCluster is a ClientCluster whose snapshots audit reads through
// snapshotReads.
type snapshotCluster struct {
	pipeline.ClientCluster
	snapshots *snapshotReads
}

func (c snapshotCluster) Snapshot(ctx context.Context, job *trainer.TrainJob) (client.Object, error) {
	return c.snapshots.Snapshot(ctx, job)
}
