package render

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var updateCRDs = flag.Bool("update", false, "rewrite the embedded CRDs (crds/*.json.gz) from the pinned Trainer module")

// TestEmbeddedCRDsMatchTrainerModule keeps the embedded CRDs (used by
// ApplyDefaults and ValidateAsAPIServer) identical to the pinned Trainer
// module's manifests/base/crds, converted to JSON. After a Trainer bump:
//
//	go test ./internal/render -run TestEmbeddedCRDsMatchTrainerModule -update
func TestEmbeddedCRDsMatchTrainerModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kubeflow/trainer/v2").Output()
	if err != nil {
		t.Skipf("cannot locate the Trainer module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "manifests", "base", "crds")
	for _, cs := range []*crdSchema{trainJobSchema, clusterTrainingRuntimeSchema, trainingRuntimeSchema} {
		upstreamFile := filepath.Join(dir, strings.TrimSuffix(filepath.Base(cs.file), ".json.gz")+".yaml")
		upstream, err := os.ReadFile(upstreamFile)
		if err != nil {
			t.Fatal(err)
		}
		want, err := yaml.YAMLToJSON(upstream)
		if err != nil {
			t.Fatalf("%s: %v", upstreamFile, err)
		}
		if *updateCRDs {
			var gz bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
			_, _ = zw.Write(want)
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cs.file, gz.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		gz, err := crdFiles.ReadFile(cs.file)
		if err != nil {
			t.Fatalf("%v (write it with -update)", err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		embedded, _ := io.ReadAll(zr)
		if !bytes.Equal(embedded, want) {
			t.Errorf("%s differs from the Trainer module's %s; refresh with: go test ./internal/render -run TestEmbeddedCRDsMatchTrainerModule -update",
				cs.file, upstreamFile)
		}
	}
	if entries, _ := crdFiles.ReadDir("crds"); len(entries) != 3 {
		t.Errorf("embedded %d CRD files, want 3", len(entries))
	}
}
