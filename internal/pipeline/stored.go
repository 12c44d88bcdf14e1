package pipeline

import (
	"context"
	"fmt"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/utils/lru"

	"github.com/mpiguard/mpiguard/internal/render"
)

// storedViewsSize bounds the views kept of stored TrainJobs.
const storedViewsSize = 4096

// storedViews keeps the rendered views of stored TrainJobs that hold quota
// without a reservation entry (every running job, once its entry is
// retired), so a quota decision does not render each of them again: a
// decision in a namespace with 50 running MPI jobs would otherwise render 50
// jobs, each render costing CPU on the create's path (BenchmarkRender64Workers
// measures one). An entry is
// valid while the job's resourceVersion, its runtime's and its namespace's
// LimitRanges' resourceVersions are unchanged.
type storedViews struct {
	mu      sync.Mutex
	entries *lru.Cache
}

type storedView struct {
	key  string
	view *render.JobView
}

func newStoredViews(size int) *storedViews { return &storedViews{entries: lru.New(size)} }

func (c *storedViews) get(uid, key string) (*render.JobView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries.Get(uid)
	if !ok || v.(storedView).key != key {
		return nil, false
	}
	return v.(storedView).view, true
}

func (c *storedViews) put(uid, key string, view *render.JobView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.Add(uid, storedView{key: key, view: view})
}

// RenderStored renders a TrainJob read from the cluster (not one being
// admitted) with namespace context ns: what a job that already holds quota
// will create, built as the Trainer builds it, from the job's runtime
// snapshot when it has one (snapshot.go). The quota decisions of other jobs
// count it.
func (p *Pipeline) RenderStored(ctx context.Context, c Cluster, job *trainer.TrainJob, ns *Namespace) (*render.JobView, error) {
	rt, err := c.Runtime(ctx, job)
	gone := IsRuntimeGone(err)
	if err != nil && (!gone || job.UID == "") {
		return nil, err
	}
	if job.UID == "" { // not from an apiserver (`mpiguard check`'s documents): nothing identifies it, no snapshot
		return p.renderer.Render(ctx, render.Input{TrainJob: job, Runtime: rt, LimitRanges: ns.LimitRanges, RuntimeClasses: ns.RuntimeClasses, PriorityClasses: ns.PriorityClasses, ServiceAccounts: ns.ServiceAccounts})
	}
	var key strings.Builder
	key.WriteString(job.ResourceVersion)
	if gone {
		key.WriteString("/-")
	} else {
		key.WriteString("/" + rt.GetResourceVersion())
	}
	for i := range ns.LimitRanges {
		key.WriteString("/" + ns.LimitRanges[i].ResourceVersion)
	}
	uid := string(job.UID)
	if v, ok := p.stored.get(uid, key.String()); ok {
		return v, nil
	}
	// The snapshot is read from the apiserver only when the job, its
	// runtime or the namespace's LimitRanges changed since the last render:
	// an edit of the snapshot alone changes nothing the job runs until its
	// next JobSet, which only a resume builds, and a resume is an update of
	// the job (a new resourceVersion), judged on a fresh read of the snapshot.
	snap, snapErr := c.Snapshot(ctx, job)
	switch {
	case snapErr != nil:
		return nil, snapErr
	case snap != nil:
		rt = snap // the Trainer no longer needs the runtime
	case gone:
		return nil, err
	}
	v, err := p.renderer.Render(ctx, render.Input{TrainJob: job, Runtime: rt, LimitRanges: ns.LimitRanges, RuntimeClasses: ns.RuntimeClasses, PriorityClasses: ns.PriorityClasses, ServiceAccounts: ns.ServiceAccounts})
	if err != nil {
		return nil, err
	}
	p.stored.put(uid, key.String(), v)
	return v, nil
}

// StoredRenderer renders the stored jobs of namespace ns for a quota
// decision (reservations.ReadState): RenderStored, except that a job whose
// runtime is gone creates no pods, so holds nothing (nil view, no error), and
// a job that cannot be rendered (a runtime mpiguard does not govern, beyond
// what it renders) is charged what the JobSet the Trainer built for it asks.
// Only a job that neither renders nor has a JobSet fails the decision: its
// charge is unknown. The webhook, audit and the Kueue admission check count
// other jobs with it.
func (p *Pipeline) StoredRenderer(c Cluster, ns *Namespace) func(context.Context, *trainer.TrainJob) (*render.JobView, error) {
	return func(ctx context.Context, job *trainer.TrainJob) (*render.JobView, error) {
		view, err := p.RenderStored(ctx, c, job, ns)
		switch {
		case IsRuntimeGone(err):
			return nil, nil
		case err == nil:
			return view, nil
		}
		js, jsErr := c.JobSet(ctx, job)
		switch {
		case jsErr != nil:
			return nil, fmt.Errorf("%w (and its JobSet, to charge it from, could not be read: %v)", err, jsErr)
		case js == nil:
			return nil, fmt.Errorf("%w (and it has no JobSet yet to charge it from)", err)
		}
		return render.OfJobSet(js, ns.LimitRanges, ns.RuntimeClasses), nil
	}
}
