package framework

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mpiguard/mpiguard/internal/devcluster"
)

// HelmChart is mpiguard's chart, relative to the repository root.
const HelmChart = "config/helm/mpiguard"

// WithImage returns values with image.repository and image.tag set to
// config/manager's image (mpiguard:dev) where values set none: the chart
// requires an image, and the tests that compare it with config/default use
// the image config/default has.
func WithImage(values map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		out[k] = v
	}
	image := map[string]any{"repository": "mpiguard", "tag": "dev"}
	if set, ok := values["image"].(map[string]any); ok {
		for k, v := range set {
			image[k] = v
		}
	}
	out["image"] = image
	return out
}

// HelmTemplate renders mpiguard's chart as `helm template release
// config/helm/mpiguard --namespace namespace --include-crds` does, with values
// over the chart's values.yaml, in process with Helm's library (no helm
// binary, no cluster: `lookup` finds nothing). It returns the crds/ objects
// first, then the templates' in file order; NOTES.txt is not an object.
func HelmTemplate(release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	chrt, err := loader.Load(filepath.Join(RepoRoot(), HelmChart))
	if err != nil {
		return nil, fmt.Errorf("helm: loading %s: %w", HelmChart, err)
	}
	top, err := chartutil.ToRenderValues(chrt, values,
		chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("helm: values of %s: %w", HelmChart, err)
	}
	rendered, err := engine.Engine{Strict: false}.Render(chrt, top)
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w", HelmChart, err)
	}
	var objs []*unstructured.Unstructured
	for _, crd := range chrt.CRDObjects() {
		o, err := devcluster.DecodeObjects(crd.File.Data, crd.Filename)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	files := make([]string, 0, len(rendered))
	for name := range rendered {
		if !strings.HasSuffix(name, "NOTES.txt") {
			files = append(files, name)
		}
	}
	sort.Strings(files)
	for _, name := range files {
		o, err := devcluster.DecodeObjects([]byte(rendered[name]), name)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

// HelmValuesFile reads a values file of mpiguard's chart (such as
// values-openshift.yaml), as `helm install -f` would.
func HelmValuesFile(name string) (map[string]any, error) {
	v, err := chartutil.ReadValuesFile(filepath.Join(RepoRoot(), HelmChart, name))
	if err != nil {
		return nil, fmt.Errorf("helm: %w", err)
	}
	return v.AsMap(), nil
}
