// Package catalog holds mpiguard's curated MPI ClusterTrainingRuntimes. The
// readable YAML in templates/ is embedded in the binary; Load turns it into the
// full published set: every versioned runtime, its Volcano and coscheduling gang
// variants, and a stable alias per family that copies the newest version.
package catalog

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

//go:embed templates/*.yaml
var templates embed.FS

// Template is one embedded YAML file, decoded.
type Template struct {
	File    string
	Runtime *trainer.ClusterTrainingRuntime
}

// Templates decodes every embedded YAML strictly: an unknown or duplicated field
// is an error, so a typo in a template fails the unit tests and the binary's start
// instead of being dropped silently by the apiserver.
func Templates() ([]Template, error) {
	files, err := fs.Glob(templates, "templates/*.yaml")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := make([]Template, 0, len(files))
	for _, f := range files {
		data, err := templates.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rt, err := Decode(data)
		if err != nil {
			return nil, fmt.Errorf("curated runtime %s: %w", path.Base(f), err)
		}
		out = append(out, Template{File: path.Base(f), Runtime: rt})
	}
	return out, nil
}

// Decode reads one ClusterTrainingRuntime from YAML, rejecting unknown fields.
func Decode(data []byte) (*trainer.ClusterTrainingRuntime, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var rt trainer.ClusterTrainingRuntime
	// sigs.k8s.io/json reports strict errors with the full field path, as the
	// apiserver's strict field validation does.
	strictErrs, err := kjson.UnmarshalStrict(js, &rt)
	if err != nil {
		return nil, err
	}
	if len(strictErrs) > 0 {
		return nil, errors.Join(strictErrs...)
	}
	if want := trainer.GroupVersion.String(); rt.APIVersion != want || rt.Kind != trainer.ClusterTrainingRuntimeKind {
		return nil, fmt.Errorf("apiVersion/kind is %s/%s, want %s/%s", rt.APIVersion, rt.Kind, want, trainer.ClusterTrainingRuntimeKind)
	}
	if rt.Name == "" {
		return nil, fmt.Errorf("metadata.name is empty")
	}
	return &rt, nil
}

// Load returns the whole curated set for Kubernetes, sorted by name.
func Load() ([]*trainer.ClusterTrainingRuntime, error) {
	return LoadFor(PlatformKubernetes)
}

// LoadFor returns the whole curated set as published on platform p, sorted
// by name: the same names and pods on every platform, but on OpenShift
// without a fixed UID and fsGroup (see platformVariant).
func LoadFor(p Platform) ([]*trainer.ClusterTrainingRuntime, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	tpls, err := Templates()
	if err != nil {
		return nil, err
	}
	families := map[string][]*trainer.ClusterTrainingRuntime{}
	for _, t := range tpls {
		rt := platformVariant(t.Runtime, p)
		family, version := rt.Labels[LabelFamily], rt.Labels[LabelVersion]
		if family == "" || version == "" {
			return nil, fmt.Errorf("curated runtime %s: labels %s and %s are required", t.File, LabelFamily, LabelVersion)
		}
		if want := family + "-" + version; rt.Name != want {
			return nil, fmt.Errorf("curated runtime %s: name is %q, want %q (family-version)", t.File, rt.Name, want)
		}
		if _, err := versionNumber(version); err != nil {
			return nil, fmt.Errorf("curated runtime %s: %w", t.File, err)
		}
		families[family] = append(families[family], rt)
	}

	var out []*trainer.ClusterTrainingRuntime
	for family, versions := range families {
		sort.Slice(versions, func(i, j int) bool {
			a, _ := versionNumber(versions[i].Labels[LabelVersion])
			b, _ := versionNumber(versions[j].Labels[LabelVersion])
			return a < b
		})
		latest := versions[len(versions)-1]
		for _, v := range versions {
			deprecated := v.Labels[LabelTrainerSupport] == SupportDeprecated
			if v == latest && deprecated {
				return nil, fmt.Errorf("curated runtime %s is the newest of family %s but is labelled %s=%s", v.Name, family, LabelTrainerSupport, SupportDeprecated)
			}
			if v != latest && !deprecated {
				return nil, fmt.Errorf("curated runtime %s is older than %s but lacks %s=%s", v.Name, latest.Name, LabelTrainerSupport, SupportDeprecated)
			}
			for _, rt := range withGangVariants(v) {
				out = append(out, curated(rt))
			}
		}
		for _, rt := range withGangVariants(latest) {
			out = append(out, curated(alias(family, latest.Name, rt)))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Names lists the names Load publishes.
func Names(rts []*trainer.ClusterTrainingRuntime) []string {
	names := make([]string, len(rts))
	for i, rt := range rts {
		names[i] = rt.Name
	}
	return names
}

func versionNumber(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(v, "v"))
	if err != nil || !strings.HasPrefix(v, "v") || n < 1 {
		return 0, fmt.Errorf("runtime version %q must be v<N> with N >= 1 (v1, v2)", v)
	}
	return n, nil
}

// curated adds the labels every published runtime carries.
func curated(rt *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime {
	if rt.Labels == nil {
		rt.Labels = map[string]string{}
	}
	rt.Labels[LabelCurated] = "true"
	rt.Labels[LabelManagedBy] = ManagedByValue
	return rt
}

// alias copies a versioned runtime under its family's stable name. TrainJobs
// created against the alias get the newest version; a TrainJob that must never
// change pins the versioned name (see docs/runtimes.md for what the Trainer
// re-reads from a runtime while a TrainJob runs).
func alias(family, target string, versioned *trainer.ClusterTrainingRuntime) *trainer.ClusterTrainingRuntime {
	rt := versioned.DeepCopy()
	suffix := strings.TrimPrefix(versioned.Name, target)
	rt.Name = family + suffix
	rt.Labels[LabelAlias] = "true"
	if rt.Annotations == nil {
		rt.Annotations = map[string]string{}
	}
	rt.Annotations[AnnotationAliasOf] = versioned.Name
	return rt
}
