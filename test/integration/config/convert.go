package config

import "k8s.io/apimachinery/pkg/runtime"

func runtimeFromUnstructured(in map[string]any, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(in, out)
}
