package framework

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// DecisionsPerReplica counts, per replica, the lines of its decision log for
// which filter returns true (every line when filter is nil). A line is one
// validating decision as internal/engine writes it: "namespace", "trainJob",
// "operation" (CREATE, UPDATE), "allowed", "dryRunRequest", ... A replica
// that has decided nothing yet, or logs no decisions, counts 0. An unreadable
// log or a line that is not JSON fails the spec.
func (e *Env) DecisionsPerReplica(filter func(line map[string]any) bool) []int {
	ginkgo.GinkgoHelper()
	counts := make([]int, len(e.Replicas))
	for i, r := range e.Replicas {
		n, err := countDecisions(r.DecisionLog, filter)
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "reading replica %d's decision log", i)
		counts[i] = n
	}
	return counts
}

func countDecisions(path string, filter func(map[string]any) bool) (int, error) {
	if path == "" {
		return 0, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // a line lists every violation and mutation
	for line := 1; sc.Scan(); line++ {
		var entry map[string]any
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			return 0, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		if filter == nil || filter(entry) {
			n++
		}
	}
	return n, sc.Err()
}
