package devcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// KustomizeBuild renders the kustomization in dir (relative to the
// repository root) the way `kustomize build` does and returns its objects.
func KustomizeBuild(dir string) ([]*unstructured.Unstructured, error) {
	return kustomizeBuildPath(filepath.Join(RepoRoot(), dir))
}

// kustomizeBuildPath is KustomizeBuild of the kustomization at an absolute
// path (a module's, in the module cache).
func kustomizeBuildPath(path string) ([]*unstructured.Unstructured, error) {
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", path, err)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		return nil, err
	}
	return DecodeObjects(out, "kustomize build "+path)
}

// DecodeObjects reads the objects of a multi-document YAML stream; what names
// the stream in errors.
func DecodeObjects(data []byte, what string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// shippedWebhooks renders config/webhook as kustomize builds it (the
// matchConditions and namespaceSelector its patches add included) and returns
// its webhook configurations, so tests run the webhooks exactly as they ship;
// envtest then points their clientConfig at the local webhook server.
func shippedWebhooks() ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	objs, err := KustomizeBuild(filepath.Join("config", "webhook"))
	if err != nil {
		return nil, nil, err
	}
	mutating, validating, err := webhookConfigurations(objs)
	if err != nil {
		return nil, nil, fmt.Errorf("kustomize build config/webhook: %w", err)
	}
	return mutating, validating, nil
}

// webhookConfigurations decodes the webhook configurations among objs; it
// wants at least one of each kind.
func webhookConfigurations(objs []*unstructured.Unstructured) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	var (
		mutating   []*admissionv1.MutatingWebhookConfiguration
		validating []*admissionv1.ValidatingWebhookConfiguration
	)
	for _, u := range objs {
		var target any
		switch u.GetKind() {
		case "MutatingWebhookConfiguration":
			m := &admissionv1.MutatingWebhookConfiguration{}
			mutating, target = append(mutating, m), m
		case "ValidatingWebhookConfiguration":
			v := &admissionv1.ValidatingWebhookConfiguration{}
			validating, target = append(validating, v), v
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, target); err != nil {
			return nil, nil, fmt.Errorf("decoding a %s: %w", u.GetKind(), err)
		}
	}
	if len(mutating) == 0 || len(validating) == 0 {
		return nil, nil, fmt.Errorf("%d mutating and %d validating webhook configurations; want both", len(mutating), len(validating))
	}
	return mutating, validating, nil
}
