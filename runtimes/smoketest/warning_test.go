package smoketest

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncateNote(t *testing.T) {
	short := "runtime r: fine"
	if got := truncateNote(short); got != short {
		t.Errorf("short note changed: %q", got)
	}
	long := strings.Repeat("é", 600) // 1200 bytes, 2 per rune
	got := truncateNote(long)
	if len(got) > maxEventNote || !utf8.ValidString(got) || !strings.HasSuffix(got, "… (see the RuntimeTest's Succeeded condition)") {
		t.Errorf("truncateNote: %d bytes, valid UTF-8 %v, %q", len(got), utf8.ValidString(got), got[len(got)-60:])
	}
}
