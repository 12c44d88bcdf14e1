// Package reload keeps the policy engine's policy set in step with ConfigMaps,
// so compliance teams change policies without restarting mpiguard. ConfigMaps
// in mpiguard's namespace labelled mpiguard.io/policy=rego hold Rego modules
// (every key ending in .rego; a module whose package is an embedded policy's
// replaces it, others extend the set) and parameter schemas (a key
// <policy>.parameters.schema.yaml is that policy's; a replaced policy without
// one keeps its embedded schema); mpiguard.io/policy=parameters ones hold
// a parameters document under the key parameters.yaml. On every change the set
// is recompiled. A broken set is rejected: the compile error (file:row) goes
// into each policy ConfigMap's mpiguard.io/policy-status annotation and a
// Warning event, the engine's reload-failure metric counts it, and the last
// good set keeps serving. Every replica loads; only the elected leader writes
// the status and events (status.go), so replicas never fight over them.
package reload

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/mpiguard/mpiguard/internal/engine"
)

// Labels and annotations of policy ConfigMaps.
const (
	LabelPolicy    = "mpiguard.io/policy"
	KindRego       = "rego"
	KindParameters = "parameters"
	ParametersKey  = "parameters.yaml"
	// SchemaKeySuffix ends the key of a policy's parameter schema in a rego
	// ConfigMap: <policy>.parameters.schema.yaml.
	SchemaKeySuffix  = "." + engine.SchemaFile
	AnnotationStatus = "mpiguard.io/policy-status"
	ControllerName   = "policy-reload"
)

// A Role in mpiguard's own namespace, not a ClusterRole: policy ConfigMaps live
// there only, and patch on every ConfigMap of the cluster would let mpiguard's
// identity rewrite any workload's configuration (kube-system's included). The
// manager's cache watches ConfigMaps of this namespace only (cmd/mpiguard/app).
// The status annotation is a patch; events on the ConfigMaps land beside them.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch,namespace=mpiguard-system
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch,namespace=mpiguard-system

// Reconciler recompiles the policy set when a policy ConfigMap changes. It
// runs on every replica (every replica serves admission); the outcome goes to
// Status, whose writes only the elected leader makes (status.go).
type Reconciler struct {
	Client    client.Client
	Engine    *engine.Engine
	Base      engine.PolicySet
	Namespace string
	// Status is told each load's outcome.
	Status *StatusReporter
	// Loaded, when set, is called after every load that succeeded: audit
	// (internal/audit) re-judges what is stored when the version changed.
	// Set it before the manager starts; it must not block.
	Loaded func()

	// decided is set once a reconcile has loaded the ConfigMaps or rejected
	// them (Ready).
	decided atomic.Bool
}

// SetupWithManager watches policy ConfigMaps in namespace; every change
// reconciles the whole set (one key), since modules depend on each other. It
// returns the loader, whose Ready is a readiness check.
func SetupWithManager(mgr ctrl.Manager, eng *engine.Engine, base engine.PolicySet, namespace string) (*Reconciler, error) {
	status := &StatusReporter{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder(ControllerName)}
	if err := status.setupWithManager(mgr); err != nil {
		return nil, err
	}
	r := &Reconciler{Client: mgr.GetClient(), Engine: eng, Base: base, Namespace: namespace, Status: status}
	setKey := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: "policy-set"}}
	return r, ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Every mpiguard pod serves admission, so every pod loads the policies,
		// not only the leader.
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{setKey}
		}), builder.WithPredicates(policyChanged(namespace))).
		// One load at start-up even when there is no policy ConfigMap, so
		// readiness (Ready) never waits for a change that will not come.
		// Workers start once the ConfigMap informer synced, so that load
		// sees every ConfigMap.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(setKey)
			return nil
		})).
		Complete(r)
}

// policyChanged selects the events of policy ConfigMaps in namespace that can
// change the policy set. An update that changes neither data nor labels (the
// status annotation the leader writes, above all) changes no policy:
// reloading on it would have every replica recompile, and re-report, after
// every status write.
func policyChanged(namespace string) predicate.Funcs {
	isPolicy := func(o client.Object) bool {
		_, ok := o.GetLabels()[LabelPolicy]
		return ok && o.GetNamespace() == namespace
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return isPolicy(e.Object) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return isPolicy(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return isPolicy(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			if !isPolicy(e.ObjectNew) && !isPolicy(e.ObjectOld) {
				return false
			}
			oldCM, okOld := e.ObjectOld.(*corev1.ConfigMap)
			newCM, okNew := e.ObjectNew.(*corev1.ConfigMap)
			if !okOld || !okNew {
				return true
			}
			return !equality.Semantic.DeepEqual(oldCM.Labels, newCM.Labels) ||
				!equality.Semantic.DeepEqual(oldCM.Data, newCM.Data) ||
				!equality.Semantic.DeepEqual(oldCM.BinaryData, newCM.BinaryData)
		},
	}
}

// Ready is a readiness check (healthz.Checker): it passes once the policy
// ConfigMaps have been read and loaded, or rejected (the last good set, on a
// fresh pod the embedded one, keeps serving; the leader reports why). Before
// that, a fresh pod would decide with the embedded policies alone.
func (r *Reconciler) Ready(*http.Request) error {
	if !r.decided.Load() {
		return errors.New("the policy ConfigMaps have not been loaded yet")
	}
	return nil
}

// Reconcile rebuilds the policy set from the embedded base and every policy ConfigMap.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var list corev1.ConfigMapList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Namespace), client.HasLabels{LabelPolicy}); err != nil {
		return reconcile.Result{}, err
	}
	cms := list.Items
	sort.Slice(cms, func(i, j int) bool { return cms[i].Name < cms[j].Name })

	set, blame, err := r.policySet(cms)
	if err == nil {
		err = r.Engine.Load(ctx, set)
	}
	if err != nil {
		log.Error(err, "policy set rejected; the last good set keeps serving", "serving", r.Engine.Version())
	} else {
		log.Info("policy set loaded", "version", r.Engine.Version(), "configMaps", len(cms))
		if r.Loaded != nil {
			r.Loaded()
		}
	}
	r.Status.record(outcome{configMaps: cms, blame: blame, err: err, version: r.Engine.Version()})
	r.decided.Store(true)
	return reconcile.Result{}, nil
}

// policySet overlays the ConfigMaps on the base set. On a bad parameters
// document, blame names the ConfigMap at fault.
func (r *Reconciler) policySet(cms []corev1.ConfigMap) (engine.PolicySet, *corev1.ConfigMap, error) {
	modules, schemas := map[string]string{}, map[string]string{}
	params := engine.Parameters{}
	for i := range cms {
		cm := &cms[i]
		switch kind := cm.Labels[LabelPolicy]; kind {
		case KindRego:
			for key, src := range cm.Data {
				if strings.HasSuffix(key, ".rego") && !strings.HasSuffix(key, "_test.rego") {
					modules[cm.Name+"/"+key] = src
				}
				if policy, ok := strings.CutSuffix(key, SchemaKeySuffix); ok {
					if _, dup := schemas[policy]; dup {
						return engine.PolicySet{}, cm, fmt.Errorf("ConfigMap %s: a second parameter schema for policy %s (%s)", cm.Name, policy, key)
					}
					schemas[policy] = src
				}
			}
		case KindParameters:
			data, ok := cm.Data[ParametersKey]
			if !ok {
				return engine.PolicySet{}, cm, fmt.Errorf("ConfigMap %s has no %q key", cm.Name, ParametersKey)
			}
			p, err := engine.ParseParameters([]byte(data))
			if err != nil {
				return engine.PolicySet{}, cm, fmt.Errorf("ConfigMap %s: %w", cm.Name, err)
			}
			params = params.Merge(p)
		default:
			return engine.PolicySet{}, cm, fmt.Errorf("ConfigMap %s: label %s=%q is not %q or %q", cm.Name, LabelPolicy, kind, KindRego, KindParameters)
		}
	}
	set, err := r.Base.Overlay(modules, params)
	if err != nil {
		return engine.PolicySet{}, nil, err
	}
	for policy, src := range schemas {
		set.Schemas[policy] = src // Overlay's map is the set's own
	}
	return set, nil, nil
}
