package engine

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite "+capabilitiesFile+" from Capabilities() (review the diff!)")

// capabilitiesFile is the sandbox's capabilities for the opa CLI: `make lint`
// and `make test-rego` pass it to `opa check` and `opa test` with
// --capabilities, so they refuse what the engine refuses. Regenerate it with
// `go test ./internal/engine -run TestCapabilitiesFile -update`.
const capabilitiesFile = "../../test/tools/opa-capabilities.json"

// The file is exactly Capabilities(), written as `opa capabilities` writes
// them. After an OPA upgrade this fails until the file is regenerated, and
// the diff shows the builtins the upgrade lets policies call.
func TestCapabilitiesFile(t *testing.T) {
	want, err := json.MarshalIndent(Capabilities(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	if *update {
		if err := os.WriteFile(capabilitiesFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(capabilitiesFile)
	if err != nil {
		t.Fatalf("%v (generate it with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the engine's capabilities: regenerate it with `go test ./internal/engine -run TestCapabilitiesFile -update` and review the diff", capabilitiesFile)
	}
}
