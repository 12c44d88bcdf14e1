package reload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// StatusControllerName names the controller that reports load outcomes.
const StatusControllerName = "policy-status"

// outcome is what one load made of the policy ConfigMaps.
type outcome struct {
	configMaps []corev1.ConfigMap
	// blame is the ConfigMap a bad parameters document came from (nil for a
	// compile error, which names its modules).
	blame   *corev1.ConfigMap
	err     error
	version string
}

// StatusReporter writes each load's outcome into the policy ConfigMaps'
// status annotation and as events. Every replica records its outcomes; only
// the elected leader's reporter runs (a controller that needs the lease), so
// one replica writes, and a new leader reports the latest outcome when it
// takes over. It is not triggered by ConfigMap events at all, only by loads,
// and the loader ignores the status annotation, so a status write can never
// start another one.
type StatusReporter struct {
	Client   client.Client
	Recorder events.EventRecorder

	mu     sync.Mutex
	latest *outcome
	// queue is the reporter controller's, once it runs (this replica leads).
	queue workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// statusKey is the reporter's one work item: report the latest outcome.
var statusKey = reconcile.Request{NamespacedName: client.ObjectKey{Name: "policy-status"}}

func (s *StatusReporter) setupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(StatusControllerName).
		// NeedLeaderElection stays at its default, true: the leader only.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.queue = q
			q.Add(statusKey) // what was loaded before this replica led
			return nil
		})).
		Complete(s)
}

// record keeps o as the latest outcome and, on the leader, has it reported.
func (s *StatusReporter) record(o outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latest = &o
	if s.queue != nil {
		s.queue.Add(statusKey)
	}
}

// Reconcile reports the latest outcome; a failed write is retried with backoff.
func (s *StatusReporter) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	s.mu.Lock()
	o := s.latest
	s.mu.Unlock()
	if o == nil {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, s.report(ctx, o)
}

// report writes the outcome into every policy ConfigMap's status annotation:
// "loaded: <version>" or, for the ConfigMaps the error concerns,
// "rejected: <error>; serving <version>".
func (s *StatusReporter) report(ctx context.Context, o *outcome) error {
	var errs []error
	for i := range o.configMaps {
		cm := &corev1.ConfigMap{}
		if err := s.Client.Get(ctx, client.ObjectKeyFromObject(&o.configMaps[i]), cm); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		status := "loaded: policy set " + o.version
		concerned := o.err != nil && (o.blame == nil && mentions(o.err, cm.Name) || o.blame != nil && o.blame.Name == cm.Name)
		if concerned {
			status = fmt.Sprintf("rejected: %v; still serving policy set %s", o.err, o.version)
		} else if o.err != nil {
			status = fmt.Sprintf("not loaded: the policy set has errors elsewhere; still serving policy set %s", o.version)
		}
		// Events only with a new status: a new leader re-reporting what its
		// predecessor wrote, or a retry after another ConfigMap's failed
		// patch, repeats nothing (once per change, whichever replica leads).
		if cm.Annotations[AnnotationStatus] == status {
			continue
		}
		switch {
		case concerned:
			s.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, "PolicyRejected", "Load", "%s", status)
		case o.err == nil:
			s.Recorder.Eventf(cm, nil, corev1.EventTypeNormal, "PolicyLoaded", "Load", "%s", status)
		}
		patch := client.MergeFrom(cm.DeepCopy())
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[AnnotationStatus] = status
		if err := s.Client.Patch(ctx, cm, patch); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// mentions says whether an error names one of the ConfigMap's modules
// (module files are named "<configmap>/<key>").
func mentions(err error, cmName string) bool {
	var ce *engine.CompileError
	if !errors.As(err, &ce) {
		return true
	}
	return strings.Contains(err.Error(), cmName+"/")
}
