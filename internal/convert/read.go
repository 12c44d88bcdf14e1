package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// Document is one MPIJob read from the input, with the fields of the input
// that convert does not know.
type Document struct {
	// Source names the document: "file.yaml#2" (the second document).
	Source string
	Job    *MPIJob
	// Unknown are the input's fields that the MPIJob types here do not have
	// ("spec.foo"), or that Kubernetes' own types do not (a typo in a pod
	// template): convert cannot carry them, and says so.
	Unknown []string
}

// Read reads the MPIJob documents of a multi-document YAML or JSON stream.
// A document of another kind, or of another version of MPIJob, is an error
// naming it: convert reads kubeflow.org/v2beta1 MPIJobs only.
func Read(source string, r io.Reader) ([]Document, error) {
	reader := yaml.NewYAMLReader(bufio.NewReader(r))
	var out []Document
	for n := 1; ; n++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading document %d: %w", source, n, err)
		}
		where := fmt.Sprintf("%s#%d", source, n)
		doc, err := decode(where, raw)
		if errors.Is(err, errEmpty) {
			continue // comments alone (a licence header)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, doc)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no MPIJob found", source)
	}
	return out, nil
}

// errEmpty is decode's answer for a document of nothing but comments.
var errEmpty = errors.New("empty document")

func decode(where string, raw []byte) (Document, error) {
	js, err := sigsyaml.YAMLToJSON(raw)
	if err != nil {
		return Document{}, fmt.Errorf("%s: not YAML or JSON: %w", where, err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return Document{}, errEmpty
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return Document{}, fmt.Errorf("%s: not a Kubernetes object: %w", where, err)
	}
	if head.Kind != Kind || head.APIVersion != APIVersion {
		return Document{}, fmt.Errorf("%s: %s %s is not an MPIJob of %s: convert reads the MPI Operator's %s MPIJobs only", where, head.APIVersion, head.Kind, APIVersion, APIVersion)
	}
	job := &MPIJob{}
	strict, err := sigsjson.UnmarshalStrict(js, job, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return Document{}, fmt.Errorf("%s: %w", where, err)
	}
	doc := Document{Source: where, Job: job}
	for _, e := range strict {
		// sigs.k8s.io/json names the field: `unknown field "spec.foo"`.
		msg := e.Error()
		if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
			doc.Unknown = append(doc.Unknown, strings.Trim(name, `"`))
			continue
		}
		return Document{}, fmt.Errorf("%s: %s", where, msg)
	}
	return doc, nil
}
