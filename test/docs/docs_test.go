// Package docs runs the documentation: every shell block of README.md and
// docs/*.md marked runnable is run against the mpiguard binary built from
// this tree, and its output compared with the output the document shows.
//
// The marks, in the Markdown itself:
//
//   - a fenced block whose info string is `sh run` holds commands, one a
//     line, each an `mpiguard` command that needs no cluster; a line that ends
//     in `# exits N` must exit N, any other must exit 0;
//   - a fenced block with info string `text output` right after it (blank
//     lines between at most) is what those commands print, standard output
//     and standard error as a terminal shows them; without one, only the exit
//     statuses are checked;
//   - a fenced block whose info string has `save=NAME` (```yaml save=mnist.yaml)
//     is written to NAME before the document's commands run.
//
// The commands run in a folder of their own that holds the saved blocks and
// links to every top-level entry of the repository, so `policies/...` and
// `docs/...` paths read the tree's files.
package docs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// root is the repository, from this package's folder.
const root = "../.."

// mustRun are the documents that must keep at least one runnable block: a
// lost mark would otherwise silently stop a document from being run.
var mustRun = []string{"README.md", "docs/policies.md", "docs/runtimes.md"}

type block struct {
	file   string
	line   int // of the opening fence
	indent int // of the opening fence: a block in a list item is indented
	info   string
	body   string
}

// blocks returns the fenced code blocks of a Markdown file, in order, and for
// each whether only blank lines separate it from the block before.
func blocks(t *testing.T, file string) (out []block, adjacent []bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		cur      *block
		body     strings.Builder
		sinceEnd = -1 // non-blank lines since the last block ended; -1 before any
		scanner  = bufio.NewScanner(f)
	)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &block{file: file, line: n, indent: len(line) - len(strings.TrimLeft(line, " ")), info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))}
			body.Reset()
			adjacent = append(adjacent, sinceEnd == 0)
		case cur != nil && trimmed == "```":
			cur.body = body.String()
			out = append(out, *cur)
			cur, sinceEnd = nil, 0
		case cur != nil:
			// The fence's indentation is the list item's, not the body's.
			body.WriteString(strings.TrimPrefix(line, strings.Repeat(" ", min(cur.indent, len(line)-len(strings.TrimLeft(line, " "))))) + "\n")
		case trimmed != "" && sinceEnd >= 0:
			sinceEnd++
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: a fenced block is never closed", file, cur.line)
	}
	return out, adjacent
}

var (
	saveAttr  = regexp.MustCompile(`(?:^|\s)save=(\S+)`)
	exitsNote = regexp.MustCompile(`\s+#\s*exits (\d+)\s*$`)
)

// documents are README.md and docs/*.md.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

func TestDocumentedCommands(t *testing.T) {
	bin := buildMpiguard(t)
	runnable := map[string]int{}
	for _, file := range documents(t) {
		all, adjacent := blocks(t, file)
		var dir string // the document's working folder, made on first use
		workdir := func() string {
			if dir == "" {
				dir = workFolder(t, all)
			}
			return dir
		}
		for i, b := range all {
			if b.info != "sh run" {
				continue
			}
			runnable[file]++
			var want *string
			if i+1 < len(all) && adjacent[i+1] && all[i+1].info == "text output" {
				want = &all[i+1].body
			}
			t.Run(fmt.Sprintf("%s:%d", file, b.line), func(t *testing.T) {
				got := runBlock(t, b, bin, workdir())
				if want != nil {
					if diff := cmp.Diff(*want, got); diff != "" {
						t.Errorf("%s:%d prints otherwise than the document shows (-document +printed):\n%s", b.file, b.line, diff)
					}
				}
			})
		}
	}
	for _, file := range mustRun {
		if runnable[file] == 0 {
			t.Errorf("%s has no runnable block (```sh run) any more", file)
		}
	}
}

// runBlock runs each command of b in dir and returns what they printed.
func runBlock(t *testing.T, b block, bin, dir string) string {
	t.Helper()
	var printed bytes.Buffer
	for n, line := range strings.Split(strings.TrimRight(b.body, "\n"), "\n") {
		cmdline := strings.TrimSpace(line)
		if cmdline == "" || strings.HasPrefix(cmdline, "#") {
			continue
		}
		wantExit := 0
		if m := exitsNote.FindStringSubmatch(cmdline); m != nil {
			wantExit, _ = strconv.Atoi(m[1])
			cmdline = strings.TrimSpace(cmdline[:len(cmdline)-len(m[0])])
		}
		where := fmt.Sprintf("%s:%d", b.file, b.line+1+n)
		if !strings.HasPrefix(cmdline, "mpiguard ") {
			t.Fatalf("%s: %q: a runnable block holds mpiguard commands only (they run offline, without a cluster)", where, cmdline)
		}
		cmd := exec.Command("bash", "-c", cmdline)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		// One writer for both streams: they interleave as on a terminal.
		cmd.Stdout, cmd.Stderr = &printed, &printed
		err := cmd.Run()
		exit := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			exit = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if exit != wantExit {
			t.Errorf("%s: %q exited %d, the document says %d (`# exits N` at the end of the line when not 0); it printed:\n%s", where, cmdline, exit, wantExit, printed.String())
		}
	}
	return printed.String()
}

// workFolder makes the folder a document's commands run in: its saved
// blocks, and a link to every top-level entry of the repository.
func workFolder(t *testing.T, all []block) string {
	t.Helper()
	dir := t.TempDir()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(abs, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range all {
		m := saveAttr.FindStringSubmatch(b.info)
		if m == nil {
			continue
		}
		if name := m[1]; filepath.Base(name) != name {
			t.Fatalf("%s:%d: save=%s: a file name, without a folder", b.file, b.line, name)
		}
		if err := os.WriteFile(filepath.Join(dir, m[1]), []byte(b.body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// buildMpiguard builds ./cmd/mpiguard of this tree. Not with make build's
// -trimpath and CGO_ENABLED=0: those change every package's build cache key,
// and would compile the whole dependency graph again, where this build reuses
// what the unit tests compiled.
func buildMpiguard(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mpiguard")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/mpiguard")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/mpiguard: %v\n%s", err, out)
	}
	return bin
}
