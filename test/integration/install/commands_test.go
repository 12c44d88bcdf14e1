package install

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/mpiguard/mpiguard/test/framework"
)

// installCommand is a documented command this suite runs.
var installCommand = regexp.MustCompile(`^make (deploy|deploy-openshift|undeploy|undeploy-openshift)( |$)`)

// knownCommand is every command an install section may show: the ones this
// suite runs, building and pushing the image (which needs a container engine
// and a registry), reading the cluster (`oc get`, or into a shell variable:
// `img=$(kubectl … get …)`), and installing the Helm chart (helm_test.go
// renders it in process). Anything else (a `cd`, a `kustomize edit`) would be
// an install step no test runs.
var knownCommand = regexp.MustCompile(`^(make (docker-build|deploy|deploy-openshift|undeploy|undeploy-openshift)( |$)|docker push |([a-z]+=\$\()?(oc|kubectl)( -n \S+)? get |helm install )`)

// documentedCommands returns the shell commands written in the fenced code
// blocks of the section of file whose heading is heading, as written, without
// trailing comments; it fails on a command that is not a knownCommand.
func documentedCommands(file, heading string) []string {
	GinkgoHelper()
	f, err := os.Open(filepath.Join(framework.RepoRoot(), file))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var (
		cmds    []string
		level   int // of the section's heading; 0 before it
		fenced  bool
		scanner = bufio.NewScanner(f)
	)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && strings.HasPrefix(line, "#") {
			hashes := len(line) - len(strings.TrimLeft(line, "#"))
			title := strings.TrimSpace(line[hashes:])
			switch {
			case title == heading:
				level = hashes
			case level > 0 && hashes <= level:
				level = 0
			}
			continue
		}
		if level == 0 || !fenced {
			continue
		}
		cmd, _, _ := strings.Cut(line, " #")
		cmd = strings.TrimSpace(cmd)
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		Expect(cmd).To(MatchRegexp(knownCommand.String()), "%s, %q: an install step no test runs", file, heading)
		cmds = append(cmds, cmd)
	}
	Expect(scanner.Err()).NotTo(HaveOccurred())
	return cmds
}

// commandsFor picks the documented commands of one make target.
func commandsFor(cmds []string, target string) []string {
	var out []string
	for _, c := range cmds {
		if m := installCommand.FindStringSubmatch(c); m != nil && m[1] == target {
			out = append(out, c)
		}
	}
	return out
}

// imageOf is the IMG= a documented command sets.
func imageOf(cmd string) string {
	GinkgoHelper()
	m := regexp.MustCompile(`(?:^| )IMG=(\S+)`).FindStringSubmatch(cmd)
	Expect(m).NotTo(BeNil(), "%q sets no IMG", cmd)
	return m[1]
}

// runDocumented runs a documented command as written, from the repository
// root, with DRY_RUN=server appended and kubectl pointed at the suite's
// apiserver, and returns what it printed.
func runDocumented(ctx context.Context, cmd string) string {
	GinkgoHelper()
	return run(ctx, cmd+" DRY_RUN=server")
}

func run(ctx context.Context, cmd string) string {
	GinkgoHelper()
	stdout, stderr, err := runResult(ctx, cmd)
	Expect(err).NotTo(HaveOccurred(), "%s\nstdout:\n%s\nstderr:\n%s", cmd, stdout, stderr)
	return stdout
}

// runResult runs cmd as run does and returns what it printed and how it
// ended.
func runResult(ctx context.Context, cmd string) (stdout, stderr string, err error) {
	GinkgoHelper()
	c := exec.CommandContext(ctx, "bash", "-c", cmd)
	c.Dir = framework.RepoRoot()
	// Not the make variables of a `make test` this runs under.
	var environ []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "KUBECONFIG" {
			environ = append(environ, kv)
		}
	}
	// The kubectl `make controlplane` builds (the apiserver's version) comes
	// first: the commands run the same wherever the suite runs.
	assets, err := framework.BinaryAssets()
	Expect(err).NotTo(HaveOccurred())
	for i, kv := range environ {
		if strings.HasPrefix(kv, "PATH=") {
			environ[i] = "PATH=" + assets + string(os.PathListSeparator) + strings.TrimPrefix(kv, "PATH=")
		}
	}
	c.Env = append(environ, "KUBECONFIG="+kubeconfig)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err = c.Run()
	GinkgoWriter.Printf("$ %s\n%s%s", cmd, out.String(), errOut.String())
	return out.String(), errOut.String(), err
}

// needKubectl fails unless `make controlplane` built kubectl next to the
// apiserver: the Makefile's deploy targets pipe into it, and run puts it
// first on PATH.
func needKubectl() {
	GinkgoHelper()
	assets, err := framework.BinaryAssets()
	Expect(err).NotTo(HaveOccurred())
	_, err = os.Stat(filepath.Join(assets, "kubectl"))
	Expect(err).NotTo(HaveOccurred(), "kubectl is not in %s: run make controlplane", assets)
}

var (
	appliedLine = regexp.MustCompile(`^([^/\s]+)/(\S+) serverside-applied \(server dry run\)$`)
	// kubectl 1.33 and later add "from NS namespace" to a namespaced object.
	deletedLine = regexp.MustCompile(`^(\S+) "([^"]+)" deleted (?:from \S+ namespace )?\(server dry run\)$`)
)

// objectsIn reads kubectl's report of a dry-run apply or delete as
// kind/name (the resource type's first part, which is the lower-case kind).
func objectsIn(out string, line *regexp.Regexp) []string {
	GinkgoHelper()
	var objs []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		m := line.FindStringSubmatch(strings.TrimSpace(l))
		Expect(m).NotTo(BeNil(), "kubectl printed %q, not a dry-run result", l)
		resource, _, _ := strings.Cut(m[1], ".")
		objs = append(objs, resource+"/"+m[2])
	}
	return objs
}

// treeHash fingerprints the files an install must not change: config/ (which
// `make verify` regenerates and compares), the README and docs/.
func treeHash() string {
	GinkgoHelper()
	h := sha256.New()
	root := framework.RepoRoot()
	for _, top := range []string{"config", "docs", "README.md"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write([]byte(path + "\x00"))
			h.Write(data)
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
	}
	return hex.EncodeToString(h.Sum(nil))
}
