package audit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"

	"github.com/mpiguard/mpiguard/internal/audit"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// buildMpiguard builds the mpiguard binary as users run it.
func buildMpiguard(ctx context.Context) string {
	GinkgoHelper()
	bin := filepath.Join(GinkgoT().TempDir(), "mpiguard")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/mpiguard")
	build.Dir = framework.RepoRoot()
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build: %s", out)
	return bin
}

// writeKubeconfig writes a kubeconfig for the suite's apiserver, as kubectl
// would find one.
func writeKubeconfig() string {
	GinkgoHelper()
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(path, env.Testenv.KubeConfig, 0o600)).To(Succeed())
	return path
}

// finding is one result compared between the CLI and the Report.
type finding struct{ Kind, Name, Policy, Result, Message string }

func sortFindings(fs []finding) []finding {
	sort.Slice(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Kind+"/"+a.Name != b.Kind+"/"+b.Name {
			return a.Kind+"/"+a.Name < b.Kind+"/"+b.Name
		}
		return a.Policy < b.Policy
	})
	return fs
}

var _ = Describe("mpiguard audit (the command line)", func() {
	It("prints, for a live cluster, the same findings as the namespace's Report, and exits 1 on a violation", func(ctx context.Context) {
		bin := buildMpiguard(ctx)
		kubeconfig := writeKubeconfig()

		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("audit-cli-"+ns).Cluster())
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team", "pods", "10"), fixtures.ResourceList("pods", "0"))
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "queued", rt.Name).NumNodes(2).Suspend(true).Obj())).To(Succeed())
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "small", rt.Name).NumNodes(1).Suspend(true).Obj())).To(Succeed())
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "queued", "aggregate-quota")
		// 3 pods for "queued" no longer fit; "small" (2 pods) still does.
		setQuotaPods(ctx, ns, "team", "2")
		eventuallyResult(ctx, ns, trainer.TrainJobKind, "queued", "aggregate-quota", reports.Result(audit.Fail))
		eventuallyPasses(ctx, ns, trainer.TrainJobKind, "small", "aggregate-quota")

		var fromReport []finding
		rep := report(ctx, ns)
		for _, r := range rep.Results {
			Expect(r.Subjects).To(HaveLen(1))
			fromReport = append(fromReport, finding{r.Subjects[0].Kind, r.Subjects[0].Name, r.Policy, string(r.Result), r.Description})
		}

		By("mpiguard audit -A -o json, with the kubeconfig kubectl would use")
		cmd := exec.CommandContext(ctx, bin, "audit", "-A", "-o", "json", "--mpiguard-namespace", env.PolicyNamespace)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		var stderr []byte
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			stderr = exit.Stderr
		}
		// Other specs' namespaces may hold jobs of deleted runtimes (errors,
		// exit 2): this namespace's exit code is checked with -n below.
		Expect(exit).To(HaveOccurred(), "a violation exits non-zero: %v", err)
		Expect(exit.ExitCode()).To(BeElementOf(1, 2), "stderr:\n%s", stderr)
		Expect(string(stderr)).To(ContainSubstring("namespaces ("+ns+")"), "progress on stderr")

		var printed struct {
			Results []struct {
				Namespace, Kind, Name, Policy, Result, Message string
			} `json:"results"`
		}
		Expect(json.Unmarshal(out, &printed)).To(Succeed(), "%s", out)
		// The CLI prints every result; the Report lists what does not pass
		// and counts the passes.
		var fromCLI []finding
		passes := 0
		for _, r := range printed.Results {
			switch {
			case r.Namespace != ns:
			case r.Result == string(audit.Pass):
				passes++
			default:
				fromCLI = append(fromCLI, finding{r.Kind, r.Name, r.Policy, r.Result, r.Message})
			}
		}
		Expect(sortFindings(fromCLI)).To(Equal(sortFindings(fromReport)))
		Expect(passes).To(BeNumerically(">", 0))
		Expect(rep.Summary.Pass).To(Equal(passes), "the Report counts the passes the CLI prints")
		Expect(fromCLI).To(ContainElement(And(
			HaveField("Name", "queued"), HaveField("Policy", "aggregate-quota"), HaveField("Result", "fail"),
			HaveField("Message", ContainSubstring("3 pods")))))

		By("the table names the violation for a reader")
		table := exec.CommandContext(ctx, bin, "audit", "-n", ns, "--kubeconfig", kubeconfig, "--mpiguard-namespace", env.PolicyNamespace)
		out, err = table.Output()
		Expect(errors.As(err, &exit)).To(BeTrue(), "a violation exits non-zero: %v", err)
		Expect(exit.ExitCode()).To(Equal(1), "exit 1: violations, no error; stderr:\n%s", exit.Stderr)
		Expect(string(out)).To(And(ContainSubstring("NAMESPACE"), MatchRegexp(ns+`\s+TrainJob/queued\s+aggregate-quota\s+fail\s+.*3 pods`)))
		Expect(string(out)).NotTo(ContainSubstring("TrainJob/small"), "passes are not listed in the table")
	})
})
