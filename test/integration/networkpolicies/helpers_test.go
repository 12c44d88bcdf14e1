package networkpolicies

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/networkpolicies"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// quiet is how long a negative check ("no policy appears") watches.
	quiet = 3 * time.Second
)

// policyOf returns the NetworkPolicy named after the job, or nil when absent.
func policyOf(ctx context.Context, ns, name string) func(Gomega) *networkingv1.NetworkPolicy {
	return func(g Gomega) *networkingv1.NetworkPolicy {
		var p networkingv1.NetworkPolicy
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p)
		if apierrors.IsNotFound(err) {
			return nil
		}
		g.Expect(err).NotTo(HaveOccurred())
		return &p
	}
}

// annotateNamespace sets (value != "") or removes (value == "") annotations.
func annotateNamespace(ctx context.Context, ns string, kv ...string) {
	var n corev1.Namespace
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &n)).To(Succeed())
	patch := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(n.Annotations, kv[i])
		} else {
			n.Annotations[kv[i]] = kv[i+1]
		}
	}
	Expect(env.Client.Patch(ctx, &n, patch)).To(Succeed())
}

// eventReasons lists the reasons of events.k8s.io events about the named object.
func eventReasons(ctx context.Context, ns, name string) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}
}

// eventNotes lists the notes of events about the named object with the reason.
func eventNotes(ctx context.Context, ns, name, reason string) func(Gomega) []string {
	return func(g Gomega) []string {
		var list eventsv1.EventList
		g.Expect(env.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == name && e.Reason == reason {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}
}

// changes reads the controller's counter of policy writes with the action; the
// controller runs in this process, so this is the series /metrics serves.
func changes(action string) float64 {
	var m dto.Metric
	Expect(networkpolicies.PolicyChanges.WithLabelValues(action).Write(&m)).To(Succeed())
	return m.GetCounter().GetValue()
}
