package devcluster

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// kueueWebhookGroups are the API groups whose Kueue webhooks the suite
// registers: Kueue's own objects and its one integration here, TrainJob.
// An install registers every integration's webhooks too; those of pods,
// Deployments, StatefulSets and the other job kinds are not this suite's
// business (Kueue runs no integration for them).
var kueueWebhookGroups = []string{"kueue.x-k8s.io", "trainer.kubeflow.org"}

// kueueWebhooks are Kueue's webhook configurations as its install registers
// them (the kustomize build of config/components/webhook in the pinned
// module, named with the install's "kueue-" prefix, which also orders
// Kueue's mutating webhooks before mpiguard's: the apiserver calls
// configurations by name), keeping the webhooks of kueueWebhookGroups,
// each pointed at Kueue's webhook server on host:port, whose serving
// certificate caBundle verifies.
func kueueWebhooks(host string, port int, caBundle []byte) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	dir, err := moduleSubdir(KueueModule, "config/components/webhook")
	if err != nil {
		return nil, nil, err
	}
	objs, err := kustomizeBuildPath(dir)
	if err != nil {
		return nil, nil, err
	}
	mutating, validating, err := webhookConfigurations(objs)
	if err != nil {
		return nil, nil, fmt.Errorf("the webhooks of Kueue (%s): %w", dir, err)
	}
	base := "https://" + net.JoinHostPort(host, strconv.Itoa(port))
	point := func(cc *admissionv1.WebhookClientConfig) error {
		if cc.Service == nil || cc.Service.Path == nil {
			return fmt.Errorf("a webhook of Kueue has no service path: %+v", cc)
		}
		*cc = admissionv1.WebhookClientConfig{URL: ptr.To(base + *cc.Service.Path), CABundle: caBundle}
		return nil
	}
	for _, m := range mutating {
		m.Name = "kueue-" + m.Name
		m.Webhooks = slices.DeleteFunc(m.Webhooks, func(w admissionv1.MutatingWebhook) bool { return !kueueGroup(w.Rules) })
		for i := range m.Webhooks {
			if err := point(&m.Webhooks[i].ClientConfig); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, v := range validating {
		v.Name = "kueue-" + v.Name
		v.Webhooks = slices.DeleteFunc(v.Webhooks, func(w admissionv1.ValidatingWebhook) bool { return !kueueGroup(w.Rules) })
		for i := range v.Webhooks {
			if err := point(&v.Webhooks[i].ClientConfig); err != nil {
				return nil, nil, err
			}
		}
	}
	return mutating, validating, nil
}

// kueueGroup says whether rules cover one of kueueWebhookGroups.
func kueueGroup(rules []admissionv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if slices.Contains(kueueWebhookGroups, g) {
				return true
			}
		}
	}
	return false
}
