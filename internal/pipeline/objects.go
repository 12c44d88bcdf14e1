package pipeline

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/jobstate"
	"github.com/mpiguard/mpiguard/internal/quota"
	"github.com/mpiguard/mpiguard/internal/render"
)

// RBAC (ClusterRole): whether the objects a job creates exist already is a
// GET of each by name (metadata only); ConfigMaps and JobSets are read
// elsewhere already.
// +kubebuilder:rbac:groups="",resources=secrets;services;persistentvolumeclaims,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get
// +kubebuilder:rbac:groups=scheduling.x-k8s.io;scheduling.volcano.sh,resources=podgroups,verbs=get

// existingObjects sets, for each kind of object view says job creates that
// an unscoped quota of the namespace counts, how many exist already: the
// Trainer applies or reuses what exists (an SSH Secret of that name is kept,
// a resumed job finds the Jobs its suspended JobSet made), so they are not
// created again, and the quota's status.used counts them. Kinds no quota
// counts are not read: nothing would depend on them.
//
// Only a decision that starts pods reads them: only then are object counts
// judged (object-quota), and a running job's audit reads none.
func (p *Pipeline) existingObjects(ctx context.Context, c Cluster, req *Request, view *render.JobView, quotas []corev1.ResourceQuota) error {
	job := req.TrainJob
	if view.RunsElsewhere || !jobstate.StartsPods(req.OldTrainJob, req.TrainJob) {
		return nil
	}
	counted := map[corev1.ResourceName]bool{}
	for i := range quotas {
		if !quota.Unscoped(&quotas[i]) {
			continue
		}
		for name := range quotas[i].Spec.Hard {
			if n, ok := quota.ObjectCounted(name); ok {
				counted[n] = true
			}
		}
	}
	if len(counted) == 0 {
		return nil
	}
	for i := range view.Objects {
		o := &view.Objects[i]
		if !counted[quota.ObjectCountName(o.GroupResource())] {
			continue
		}
		o.Existing = 0
		for _, name := range o.Names {
			found, err := c.ObjectExists(ctx, o.GVK, client.ObjectKey{Namespace: job.Namespace, Name: name})
			if err != nil {
				return fmt.Errorf("reading %s %s/%s, which TrainJob %s creates, to tell whether it exists already: %w", o.GVK.Kind, job.Namespace, name, job.Name, err)
			}
			if found {
				o.Existing++
			}
		}
	}
	return nil
}
