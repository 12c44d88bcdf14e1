package app

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"slices"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations"
)

// decisionReads are the types the TrainJob webhooks read from the cache to
// decide (webhooks/trainjob/cluster.go; the quota reservation transaction's
// store; the policy ConfigMaps of internal/reload).
func decisionReads() []client.Object {
	return []client.Object{
		&trainer.TrainJob{}, &trainer.ClusterTrainingRuntime{}, &trainer.TrainingRuntime{},
		&corev1.Namespace{}, &corev1.ResourceQuota{}, &corev1.LimitRange{}, &nodev1.RuntimeClass{},
		&corev1.Pod{}, &quotav1alpha1.QuotaReservation{}, &corev1.ConfigMap{},
		// Which TrainJob a pod belongs to: its JobSet's owner (metadata only).
		reservations.JobSetMeta(),
	}
}

// addCacheReadiness starts the informers of everything the webhooks read with
// the cache, at start-up instead of on the first request that reads them (the
// cache's default, which has that request wait for a whole list, or time out),
// and makes readiness wait until every one of them has synced: a pod is ready
// only when it can decide.
func addCacheReadiness(mgr ctrl.Manager) error {
	informers := map[string]cache.Informer{}
	for _, obj := range decisionReads() {
		// Registered now, started with the cache; not waited for here (the
		// cache has not started).
		inf, err := mgr.GetCache().GetInformer(context.Background(), obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("starting the informer of %T: %w", obj, err)
		}
		informers[reflect.TypeOf(obj).Elem().Name()] = inf
	}
	return mgr.AddReadyzCheck("caches", func(*http.Request) error {
		var unsynced []string
		for name, inf := range informers {
			if !inf.HasSynced() {
				unsynced = append(unsynced, name)
			}
		}
		if len(unsynced) > 0 {
			slices.Sort(unsynced) // a stable message across probes
			return fmt.Errorf("caches not synced yet: %v", unsynced)
		}
		return nil
	})
}
