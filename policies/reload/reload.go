// Package reload keeps the policy engine's policy set in step with ConfigMaps,
// so compliance teams change policies without restarting mpiguard. ConfigMaps
// in mpiguard's namespace labelled mpiguard.io/policy=rego hold Rego modules
// (every key ending in .rego; a module whose package is an embedded policy's
// replaces it, others extend the set); mpiguard.io/policy=parameters ones hold
// a parameters document under the key parameters.yaml. On every change the set
// is recompiled. A broken set is rejected: the compile error (file:row) goes
// into each policy ConfigMap's mpiguard.io/policy-status annotation and a
// Warning event, the engine's reload-failure metric counts it, and the last
// good set keeps serving.
package reload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mpiguard/mpiguard/policies/engine"
)

// Labels and annotations of policy ConfigMaps.
const (
	LabelPolicy      = "mpiguard.io/policy"
	KindRego         = "rego"
	KindParameters   = "parameters"
	ParametersKey    = "parameters.yaml"
	AnnotationStatus = "mpiguard.io/policy-status"
	ControllerName   = "policy-reload"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler recompiles the policy set when a policy ConfigMap changes.
type Reconciler struct {
	Client    client.Client
	Engine    *engine.Engine
	Base      engine.PolicySet
	Namespace string
	Recorder  events.EventRecorder
}

// SetupWithManager watches policy ConfigMaps in namespace; every change
// reconciles the whole set (one key), since modules depend on each other.
func SetupWithManager(mgr ctrl.Manager, eng *engine.Engine, base engine.PolicySet, namespace string) error {
	r := &Reconciler{Client: mgr.GetClient(), Engine: eng, Base: base, Namespace: namespace, Recorder: mgr.GetEventRecorder(ControllerName)}
	isPolicy := predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := o.GetLabels()[LabelPolicy]
		return ok && o.GetNamespace() == namespace
	})
	setKey := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: namespace, Name: "policy-set"}}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		// Every mpiguard pod serves admission, so every pod loads the policies,
		// not only the leader.
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false)}).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
			return []reconcile.Request{setKey}
		}), builder.WithPredicates(isPolicy)).
		Complete(r)
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
		return reconcile.Result{}, r.report(ctx, cms, blame, err)
	}
	log.Info("policy set loaded", "version", r.Engine.Version(), "configMaps", len(cms))
	return reconcile.Result{}, r.report(ctx, cms, nil, nil)
}

// policySet overlays the ConfigMaps on the base set. On a bad parameters
// document, blame names the ConfigMap at fault.
func (r *Reconciler) policySet(cms []corev1.ConfigMap) (engine.PolicySet, *corev1.ConfigMap, error) {
	modules := map[string]string{}
	params := engine.Parameters{}
	for i := range cms {
		cm := &cms[i]
		switch kind := cm.Labels[LabelPolicy]; kind {
		case KindRego:
			for key, src := range cm.Data {
				if strings.HasSuffix(key, ".rego") && !strings.HasSuffix(key, "_test.rego") {
					modules[cm.Name+"/"+key] = src
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
	return set, nil, err
}

// report writes the outcome into every policy ConfigMap's status annotation:
// "loaded: <version>" or, for the ConfigMaps the error concerns,
// "rejected: <error>; serving <version>".
func (r *Reconciler) report(ctx context.Context, cms []corev1.ConfigMap, blame *corev1.ConfigMap, loadErr error) error {
	var errs []error
	for i := range cms {
		cm := &cms[i]
		status := "loaded: policy set " + r.Engine.Version()
		concerned := loadErr != nil && (blame == nil && mentions(loadErr, cm.Name) || blame != nil && blame.Name == cm.Name)
		if concerned {
			status = fmt.Sprintf("rejected: %v; still serving policy set %s", loadErr, r.Engine.Version())
			r.Recorder.Eventf(cm, nil, corev1.EventTypeWarning, "PolicyRejected", "Load", "%s", status)
		} else if loadErr != nil {
			status = fmt.Sprintf("not loaded: the policy set has errors elsewhere; still serving policy set %s", r.Engine.Version())
		}
		if cm.Annotations[AnnotationStatus] == status {
			continue
		}
		if !concerned && loadErr == nil {
			r.Recorder.Eventf(cm, nil, corev1.EventTypeNormal, "PolicyLoaded", "Load", "%s", status)
		}
		patch := client.MergeFrom(cm.DeepCopy())
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[AnnotationStatus] = status
		if err := r.Client.Patch(ctx, cm, patch); err != nil && !apierrors.IsNotFound(err) {
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
