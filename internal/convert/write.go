package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	sigsyaml "sigs.k8s.io/yaml"
)

// WriteYAML writes the Result's runtime and TrainJob as a YAML stream that
// `kubectl apply -f` takes (the runtime first: the TrainJob references it),
// without the fields the apiserver fills in (creationTimestamp, status).
func WriteYAML(w io.Writer, source string, r *Result) error {
	var buf bytes.Buffer
	objs := []any{r.TrainJob}
	if r.Runtime != nil {
		objs = []any{r.Runtime, r.TrainJob}
	}
	for _, obj := range objs {
		js, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return err
		}
		delete(m, "status")
		dropNullTimestamps(m)
		y, err := sigsyaml.Marshal(m)
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "---\n# mpiguard convert, from %s\n", source)
		buf.Write(y)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// dropNullTimestamps removes "creationTimestamp: null", which every
// ObjectMeta marshals to, at any depth.
func dropNullTimestamps(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ts, ok := v["creationTimestamp"]; ok && ts == nil {
			delete(v, "creationTimestamp")
		}
		for k, x := range v {
			dropNullTimestamps(x)
			if m, ok := x.(map[string]any); ok && len(m) == 0 && (k == "metadata" || k == "resources") {
				delete(v, k)
			}
		}
	case []any:
		for _, x := range v {
			dropNullTimestamps(x)
		}
	}
}
