package check

import (
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// identify gives every runtime of c a UID and a resourceVersion of its own,
// as the apiserver does when it creates an object. The renderer caches a
// runtime's template, merged and converted for the Trainer's plugins, by
// them (internal/render, templatecache.go): the jobs of one runtime then
// share one merge instead of one each (BenchmarkCheck). Whatever the documents said is
// replaced: two documents may carry the same pair with different specs (an
// edited `kubectl get -o yaml`, two --each-file clusters), and no decision
// reads either.
func identify(c *Cluster) {
	for _, o := range c.runtimeObjects() {
		o.SetUID(uuid.NewUUID())
		o.SetResourceVersion("1")
	}
}

// runtimeObjects lists every runtime of c: ClusterTrainingRuntimes,
// TrainingRuntimes and the curated ones.
func (c *Cluster) runtimeObjects() []client.Object {
	objs := make([]client.Object, 0, len(c.ClusterRuntimes)+len(c.Runtimes)+len(c.Curated))
	for _, r := range c.ClusterRuntimes {
		objs = append(objs, r)
	}
	for _, r := range c.Runtimes {
		objs = append(objs, r)
	}
	for _, r := range c.Curated {
		objs = append(objs, r)
	}
	return objs
}
