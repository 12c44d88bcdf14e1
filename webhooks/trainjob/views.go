package trainjob

import (
	"context"
	"strings"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/utils/lru"

	"github.com/mpiguard/mpiguard/policies/render"
)

// viewCache keeps the rendered views of admitted TrainJobs, so counting pending
// jobs against a quota does not re-render them on every submit. An entry is
// valid while the job's generation, its runtime's and its namespace's
// LimitRanges' resourceVersions are unchanged.
type viewCache struct {
	mu      sync.Mutex
	entries *lru.Cache
}

type cachedView struct {
	key  string
	view *render.JobView
}

func newViewCache(size int) *viewCache { return &viewCache{entries: lru.New(size)} }

func (c *viewCache) get(uid, key string) (*render.JobView, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries.Get(uid)
	if !ok || v.(cachedView).key != key {
		return nil, false
	}
	return v.(cachedView).view, true
}

func (c *viewCache) put(uid, key string, view *render.JobView) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries.Add(uid, cachedView{key: key, view: view})
}

// pendingView renders a stored TrainJob that holds quota without an entry,
// through the cache; nsc is the namespace context of the decision.
func (a *admitter) pendingView(ctx context.Context, job *trainer.TrainJob, nsc *namespaceContext) (*render.JobView, error) {
	rt, err := a.cluster.runtimeOf(ctx, job)
	if err != nil {
		return nil, err
	}
	var key strings.Builder
	key.WriteString(job.ResourceVersion)
	key.WriteString("/" + rt.GetResourceVersion())
	for i := range nsc.LimitRanges {
		key.WriteString("/" + nsc.LimitRanges[i].ResourceVersion)
	}
	uid := string(job.UID)
	if v, ok := a.views.get(uid, key.String()); ok {
		return v, nil
	}
	v, err := a.renderer.Render(ctx, render.Input{TrainJob: job, Runtime: rt, LimitRanges: nsc.LimitRanges, RuntimeClasses: nsc.RuntimeClasses})
	if err != nil {
		return nil, err
	}
	a.views.put(uid, key.String(), v)
	return v, nil
}
