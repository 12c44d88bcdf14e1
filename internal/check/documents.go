// Package check evaluates manifests without a cluster, exactly as admission
// would: the documents read form the cluster (Namespaces, ResourceQuotas with
// their status.used, LimitRanges, RuntimeClasses, (Cluster)TrainingRuntimes,
// Nodes)
// and every TrainJob among them is rendered, mutated and validated as a CREATE
// with the same engine and renderer the webhooks use. `mpiguard check`,
// `mpiguard policy test` and the policy sample suite are built on it.
package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/render"
)

// Cluster is what the documents describe.
type Cluster struct {
	Namespaces     map[string]*corev1.Namespace
	Quotas         []corev1.ResourceQuota
	LimitRanges    []corev1.LimitRange
	RuntimeClasses []nodev1.RuntimeClass
	// PriorityClasses: none among the documents means not known (pods are
	// taken as they name their class).
	PriorityClasses []schedulingv1.PriorityClass
	// ServiceAccounts: none of a namespace among the documents means its
	// are not known (pods are taken to run as the ServiceAccount they name).
	ServiceAccounts []corev1.ServiceAccount
	ClusterRuntimes map[string]*trainer.ClusterTrainingRuntime
	// Runtimes are keyed "namespace/name".
	Runtimes  map[string]*trainer.TrainingRuntime
	TrainJobs []SourcedTrainJob
	// Curated are ClusterTrainingRuntimes a TrainJob may name without the
	// documents defining them, by name (check: mpiguard's curated runtimes,
	// which its controller publishes in every cluster); a runtime of the
	// documents of the same name comes first. CuratedUsed lists the names a
	// TrainJob took from Curated.
	Curated     map[string]*trainer.ClusterTrainingRuntime
	CuratedUsed []string
	// Source names the file the cluster was read from, when it is one file
	// (check --each-file); empty otherwise.
	Source string
	// Existing are the documents of kinds jobs create besides pods (a
	// Secret, a Job, ...): a job does not create them again (objects.go).
	Existing []*unstructured.Unstructured
	// Queues are Volcano Queues (queues.go); DefaultQueueAssumed says a
	// TrainJob was judged with Volcano's default queue because there were none.
	Queues              []volcanov1beta1.Queue
	DefaultQueueAssumed bool
	// Nodes are Node documents (nodes.go); NodesSkipped says a TrainJob was
	// judged without them: the node-capacity check was skipped.
	Nodes        []corev1.Node
	NodesSkipped bool
	// Ignored lists documents of kinds no decision depends on ("source: kind").
	Ignored []string
	// sources maps each object read (objectKey) to its document, to refuse duplicates.
	sources map[string]string
	// created holds the objects of kinds jobs create (objects.go).
	created map[string]bool
}

// SourcedTrainJob is a TrainJob and the document it came from.
type SourcedTrainJob struct {
	TrainJob *trainer.TrainJob
	Source   string
	// Unnamespaced says the document named no namespace (TrainJob has
	// "default"; check --from-cluster uses the kubeconfig's, as kubectl).
	Unnamespaced bool
}

// InputError is unreadable or invalid input: which file (and document) and why.
type InputError struct {
	Source string
	Err    error
}

// ErrDuplicate is a second document of an object already read.
var ErrDuplicate = errors.New("duplicate")

func (e *InputError) Error() string { return fmt.Sprintf("%s: %v", e.Source, e.Err) }
func (e *InputError) Unwrap() error { return e.Err }

// NewCluster returns an empty cluster.
func NewCluster() *Cluster {
	return &Cluster{
		Namespaces:      map[string]*corev1.Namespace{},
		ClusterRuntimes: map[string]*trainer.ClusterTrainingRuntime{},
		Runtimes:        map[string]*trainer.TrainingRuntime{},
	}
}

var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(nodev1.AddToScheme(s))
	utilruntime.Must(schedulingv1.AddToScheme(s))
	utilruntime.Must(trainer.AddToScheme(s))
	utilruntime.Must(volcanov1beta1.AddToScheme(s))
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// ReadPath reads a file, every .yaml/.yml/.json file under a directory
// (sorted, recursively), or standard input for "-".
func (c *Cluster) ReadPath(path string, stdin io.Reader) error {
	if path == "-" {
		return c.Read("<stdin>", stdin)
	}
	files, err := Files(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := c.ReadFile(f); err != nil {
			return err
		}
	}
	return nil
}

// Files lists what ReadPath reads of path: the file itself, or every
// .yaml/.yml/.json file under a directory, sorted, recursively.
func Files(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, &InputError{Source: path, Err: err}
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, &InputError{Source: path, Err: err}
	}
	if len(files) == 0 {
		return nil, &InputError{Source: path, Err: errors.New("no .yaml, .yml or .json files")}
	}
	sort.Strings(files)
	return files, nil
}

// ReadFile adds every document of one file.
func (c *Cluster) ReadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return &InputError{Source: path, Err: err}
	}
	defer f.Close() //nolint:errcheck // read-only file: a close error changes nothing
	return c.Read(path, f)
}

// Read adds every document of a multi-document YAML or JSON stream. Kinds
// other than the ones a decision depends on are ignored.
func (c *Cluster) Read(source string, r io.Reader) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		src := fmt.Sprintf("%s (document %d)", source, i)
		if err != nil {
			return &InputError{Source: src, Err: err}
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		if err := c.add(src, doc); err != nil {
			return &InputError{Source: src, Err: err}
		}
	}
}

func (c *Cluster) add(source string, doc []byte) error {
	if err := trailingJSON(doc); err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	var meta struct{ APIVersion, Kind string }
	if err := json.Unmarshal(js, &meta); err != nil { // js is JSON: no second YAML parse
		return fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if meta.Kind == "" || meta.APIVersion == "" {
		return errors.New("document has no apiVersion or kind")
	}
	if meta.Kind == "List" {
		// kubectl get -o yaml of several objects.
		var list struct {
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(js, &list); err != nil {
			return fmt.Errorf("invalid List: %w", err)
		}
		for i, item := range list.Items {
			if err := c.add(fmt.Sprintf("%s item %d", source, i), item); err != nil {
				return fmt.Errorf("item %d: %w", i, err)
			}
		}
		return nil
	}
	// Before any typed decode (render.ScreenQuantities).
	if err := render.ScreenQuantities(js); err != nil {
		return fmt.Errorf("invalid %s: %w", meta.Kind, err)
	}
	if created, err := c.addCreated(meta.APIVersion, meta.Kind, js); created || err != nil {
		return err
	}
	obj, _, err := codecs.UniversalDeserializer().Decode(js, nil, nil)
	if runtime.IsNotRegisteredError(err) {
		c.Ignored = append(c.Ignored, fmt.Sprintf("%s: %s %s", source, meta.APIVersion, meta.Kind))
		return nil // a kind no decision depends on
	}
	if err != nil {
		return fmt.Errorf("invalid %s: %w", meta.Kind, err)
	}
	// What the apiserver would refuse is refused here too (validate.go).
	unnamespaced := false
	switch o := obj.(type) {
	case *trainer.TrainJob:
		unnamespaced = o.Namespace == ""
		defaultNamespace(&o.Namespace)
		err = validateTrainer(meta.Kind, o.Namespace, js)
	case *trainer.TrainingRuntime:
		defaultNamespace(&o.Namespace)
		err = validateTrainer(meta.Kind, o.Namespace, js)
	case *trainer.ClusterTrainingRuntime:
		err = validateTrainer(meta.Kind, "", js)
	case *corev1.Namespace:
		err = validateNamespace(o)
	case *corev1.ResourceQuota:
		defaultNamespace(&o.Namespace)
		err = validateQuota(o)
	case *corev1.LimitRange:
		// Before objectKey: without a namespace it is the default namespace's.
		defaultNamespace(&o.Namespace)
	}
	if err != nil {
		return err
	}
	if c.sources == nil {
		c.sources = map[string]string{}
	}
	// A name is unique in a cluster: a second document of the same object
	// would replace the first (or, for TrainJobs, be a second job) without
	// a word.
	if key := objectKey(obj); key != "" {
		if first, ok := c.sources[key]; ok {
			return fmt.Errorf("%w %s: the same object is already in %s; a cluster has one object per kind, namespace and name", ErrDuplicate, key, first)
		}
		c.sources[key] = source
	}
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.Namespaces[o.Name] = o
	case *corev1.ResourceQuota:
		c.Quotas = append(c.Quotas, *o)
	case *corev1.LimitRange:
		c.LimitRanges = append(c.LimitRanges, *o)
	case *nodev1.RuntimeClass:
		c.RuntimeClasses = append(c.RuntimeClasses, *o)
	case *schedulingv1.PriorityClass:
		c.PriorityClasses = append(c.PriorityClasses, *o)
	case *corev1.ServiceAccount:
		c.ServiceAccounts = append(c.ServiceAccounts, *o)
	case *trainer.ClusterTrainingRuntime:
		c.ClusterRuntimes[o.Name] = o
	case *trainer.TrainingRuntime:
		c.Runtimes[o.Namespace+"/"+o.Name] = o
	case *volcanov1beta1.Queue:
		c.Queues = append(c.Queues, *o)
	case *corev1.Node:
		c.Nodes = append(c.Nodes, *o)
	case *trainer.TrainJob:
		if o.Name == "" {
			return errors.New("TrainJob has no metadata.name")
		}
		c.TrainJobs = append(c.TrainJobs, SourcedTrainJob{TrainJob: o, Source: source, Unnamespaced: unnamespaced})
	default:
		// A kind the scheme knows (a Pod, a Secret) that no decision reads.
		c.Ignored = append(c.Ignored, fmt.Sprintf("%s: %s %s", source, meta.APIVersion, meta.Kind))
	}
	return nil
}

// objectKey names an object the way the apiserver keys it: `TrainJob "ns/name"`.
func objectKey(obj runtime.Object) string {
	o, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	if !ok || o.GetName() == "" {
		return ""
	}
	kind := fmt.Sprintf("%T", obj)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	if o.GetNamespace() == "" {
		return fmt.Sprintf("%s %q", kind, o.GetName())
	}
	return fmt.Sprintf("%s %q", kind, o.GetNamespace()+"/"+o.GetName())
}

// trailingJSON refuses a JSON document followed by more than whitespace. The
// YAML parser reads `{...} garbage` as the object and drops the rest, so a
// truncated or concatenated file would be half read without a word.
func trailingJSON(doc []byte) error {
	trimmed := bytes.TrimSpace(stripComments(doc))
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil // not JSON after all: the YAML parser judges it
	}
	if rest := bytes.TrimSpace(trimmed[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("data after the JSON object at byte %d: %q", dec.InputOffset(), clipBytes(rest, 40))
	}
	return nil
}

func clipBytes(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func defaultNamespace(ns *string) {
	if *ns == "" {
		*ns = "default"
	}
}

// stripComments drops comment-only lines so a document of comments is empty.
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
