// Package offline evaluates manifests without a cluster, exactly as admission
// would: the documents read form the cluster (Namespaces, ResourceQuotas with
// their status.used, LimitRanges, RuntimeClasses, (Cluster)TrainingRuntimes)
// and every TrainJob among them is rendered, mutated and validated as a CREATE
// with the same engine and renderer the webhooks use. `mpiguard check`,
// `mpiguard policy test` and the policy sample suite are built on it.
package offline

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Cluster is what the documents describe.
type Cluster struct {
	Namespaces      map[string]*corev1.Namespace
	Quotas          []corev1.ResourceQuota
	LimitRanges     []corev1.LimitRange
	RuntimeClasses  []nodev1.RuntimeClass
	ClusterRuntimes map[string]*trainer.ClusterTrainingRuntime
	// Runtimes are keyed "namespace/name".
	Runtimes  map[string]*trainer.TrainingRuntime
	TrainJobs []SourcedTrainJob
	// Ignored lists documents of kinds no decision depends on ("source: kind").
	Ignored []string
}

// SourcedTrainJob is a TrainJob and the document it came from.
type SourcedTrainJob struct {
	TrainJob *trainer.TrainJob
	Source   string
}

// InputError is unreadable or invalid input: which file (and document) and why.
type InputError struct {
	Source string
	Err    error
}

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
	utilruntime.Must(trainer.AddToScheme(s))
	return serializer.NewCodecFactory(s, serializer.EnableStrict)
}()

// ReadPath reads a file, every .yaml/.yml/.json file under a directory
// (sorted, recursively), or standard input for "-".
func (c *Cluster) ReadPath(path string, stdin io.Reader) error {
	if path == "-" {
		return c.Read("<stdin>", stdin)
	}
	info, err := os.Stat(path)
	if err != nil {
		return &InputError{Source: path, Err: err}
	}
	if !info.IsDir() {
		return c.readFile(path)
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
		return &InputError{Source: path, Err: err}
	}
	if len(files) == 0 {
		return &InputError{Source: path, Err: errors.New("no .yaml, .yml or .json files")}
	}
	sort.Strings(files)
	for _, f := range files {
		if err := c.readFile(f); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) readFile(path string) error {
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
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("not YAML or JSON: %w", err)
	}
	var meta struct{ APIVersion, Kind string }
	if err := yaml.Unmarshal(js, &meta); err != nil {
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
	obj, _, err := codecs.UniversalDeserializer().Decode(js, nil, nil)
	if runtime.IsNotRegisteredError(err) {
		c.Ignored = append(c.Ignored, fmt.Sprintf("%s: %s %s", source, meta.APIVersion, meta.Kind))
		return nil // a kind no decision depends on
	}
	if err != nil {
		return fmt.Errorf("invalid %s: %w", meta.Kind, err)
	}
	switch o := obj.(type) {
	case *corev1.Namespace:
		c.Namespaces[o.Name] = o
	case *corev1.ResourceQuota:
		defaultNamespace(&o.Namespace)
		c.Quotas = append(c.Quotas, *o)
	case *corev1.LimitRange:
		defaultNamespace(&o.Namespace)
		c.LimitRanges = append(c.LimitRanges, *o)
	case *nodev1.RuntimeClass:
		c.RuntimeClasses = append(c.RuntimeClasses, *o)
	case *trainer.ClusterTrainingRuntime:
		c.ClusterRuntimes[o.Name] = o
	case *trainer.TrainingRuntime:
		defaultNamespace(&o.Namespace)
		c.Runtimes[o.Namespace+"/"+o.Name] = o
	case *trainer.TrainJob:
		defaultNamespace(&o.Namespace)
		if o.Name == "" {
			return errors.New("TrainJob has no metadata.name")
		}
		c.TrainJobs = append(c.TrainJobs, SourcedTrainJob{TrainJob: o, Source: source})
	}
	return nil
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
