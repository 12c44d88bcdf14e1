package diagnosis

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestAnchors: every Event links a section of docs/troubleshooting.md that
// exists (GitHub's anchor of its heading).
func TestAnchors(t *testing.T) {
	doc, err := os.ReadFile("../../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	slugs := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 -]`)
	for _, l := range strings.Split(string(doc), "\n") {
		if h, ok := strings.CutPrefix(l, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			slugs[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	for _, r := range Reasons() {
		a := Anchor(r)
		anchor, ok := strings.CutPrefix(a, "docs/troubleshooting.md#")
		if !ok || anchor == "" || !slugs[anchor] {
			t.Errorf("reason %s links %s: no such section in docs/troubleshooting.md", r, a)
		}
	}
}
