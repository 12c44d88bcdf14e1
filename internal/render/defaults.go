package render

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// The Trainer's CRDs carry defaults (mpiImplementation, sshAuthMountPath,
// numProcPerNode, runLauncherAsNode, replicated job replicas, runtimeRef kind and
// group, ...) that only the apiserver applies, from the CRD's structural schema.
// Objects read from files (the offline `mpiguard check`) never went through it, so
// ApplyDefaults applies the very same schema with the apiserver's own defaulting
// algorithm. The CRDs are the pinned Trainer module's manifests/base/crds,
// embedded as gzipped JSON (sigs.k8s.io/yaml's conversion of the module's
// YAML); crds_test.go keeps them identical to the module's copy and rewrites
// them with -update. JSON, not the YAML itself: decoding a CRD from YAML (the
// runtimes' are near a megabyte each) costs much more than from JSON, paid at
// the start of every `mpiguard check`.
//
//go:embed crds/*.json.gz
var crdFiles embed.FS

// crdSchema lazily parses one embedded CRD into its structural schema: parsing costs
// tens of milliseconds and is only needed offline.
type crdSchema struct {
	file   string
	once   sync.Once
	schema *structuralschema.Structural
	// props is the schema as the apiserver's OpenAPI validator reads it (validate.go).
	props *apiextensions.JSONSchemaProps
	err   error
}

var (
	trainJobSchema               = &crdSchema{file: "crds/trainer.kubeflow.org_trainjobs.json.gz"}
	clusterTrainingRuntimeSchema = &crdSchema{file: "crds/trainer.kubeflow.org_clustertrainingruntimes.json.gz"}
	trainingRuntimeSchema        = &crdSchema{file: "crds/trainer.kubeflow.org_trainingruntimes.json.gz"}
)

func (c *crdSchema) get() (*structuralschema.Structural, error) {
	c.once.Do(func() { c.props, c.schema, c.err = loadStructuralSchema(c.file, trainer.GroupVersion.Version) })
	return c.schema, c.err
}

func loadStructuralSchema(file, version string) (*apiextensions.JSONSchemaProps, *structuralschema.Structural, error) {
	gz, err := crdFiles.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(data, crd); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
			return nil, nil, fmt.Errorf("%s: converting schema: %w", file, err)
		}
		s, err := structuralschema.NewStructural(internal)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: structural schema: %w", file, err)
		}
		return internal, s, nil
	}
	return nil, nil, fmt.Errorf("%s: no schema for version %s", file, version)
}

// ApplyDefaults applies, in place, the defaults the apiserver would apply when these
// objects are created: the CRD schema defaults of TrainJobs, ClusterTrainingRuntimes
// and TrainingRuntimes, and the LimitRange item defaults of core/v1
// (SetDefaults_LimitRangeItem). Objects read from the apiserver already have them;
// applying them twice changes nothing. Other object types are left alone.
func ApplyDefaults(objs ...client.Object) error {
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *trainer.TrainJob:
			err = defaultFromSchema(trainJobSchema, o)
		case *trainer.ClusterTrainingRuntime:
			err = defaultFromSchema(clusterTrainingRuntimeSchema, o)
		case *trainer.TrainingRuntime:
			err = defaultFromSchema(trainingRuntimeSchema, o)
		case *corev1.LimitRange:
			for i := range o.Spec.Limits {
				defaultLimitRangeItem(&o.Spec.Limits[i])
			}
		}
		if err != nil {
			return fmt.Errorf("defaulting %T %q: %w", obj, obj.GetName(), err)
		}
	}
	return nil
}

// defaultFromSchema round-trips obj through JSON (as the apiserver sees it) and
// applies the structural schema defaults to it.
func defaultFromSchema(cs *crdSchema, obj client.Object) error {
	s, err := cs.get()
	if err != nil {
		return err
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	// utiljson keeps integers int64, as the apiserver's decoder does: through
	// float64, an activeDeadlineSeconds above 2^53 would change and one near
	// 2^63 would not decode back at all.
	var u map[string]any
	if err := utiljson.Unmarshal(data, &u); err != nil {
		return err
	}
	structuraldefaulting.Default(u, s)
	if data, err = json.Marshal(u); err != nil {
		return err
	}
	// Decode into a zeroed object, as a fresh read from the apiserver would.
	reflect.ValueOf(obj).Elem().SetZero()
	return json.Unmarshal(data, obj)
}

// defaultLimitRangeItem is k8s.io/kubernetes pkg/apis/core/v1/defaults.go
// SetDefaults_LimitRangeItem: for Container items, default limits fall back to max,
// default requests to the default limit, then to min.
func defaultLimitRangeItem(item *corev1.LimitRangeItem) {
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range item.Max {
		if _, ok := item.Default[k]; !ok {
			item.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Default {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Min {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
}
