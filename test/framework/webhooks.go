package framework

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// shippedWebhooks renders config/webhook as kustomize builds it (the
// matchConditions and namespaceSelector its patches add included) and returns
// its webhook configurations, so tests run the webhooks exactly as they ship;
// envtest then points their clientConfig at the local webhook server.
func shippedWebhooks() ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	dir := filepath.Join(RepoRoot(), "config", "webhook")
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, nil, err
	}
	var (
		mutating   []*admissionv1.MutatingWebhookConfiguration
		validating []*admissionv1.ValidatingWebhookConfiguration
	)
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := utilyaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("kustomize build %s: %w", dir, err)
		}
		var target any
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			mutating, target = append(mutating, m), m
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			validating, target = append(validating, v), v
		default:
			continue
		}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096).Decode(target); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("kustomize build %s: decoding a %s: %w", dir, meta.Kind, err)
		}
	}
	if len(mutating) == 0 || len(validating) == 0 {
		return nil, nil, fmt.Errorf("kustomize build %s renders %d mutating and %d validating webhook configurations; want both", dir, len(mutating), len(validating))
	}
	return mutating, validating, nil
}
