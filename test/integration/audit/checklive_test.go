package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("mpiguard check --from-cluster", func() {
	It("gives a TrainJob the verdict admission gives it now: live quotas, what admitted jobs hold, the namespace's runtimes", func(ctx context.Context) {
		bin := buildMpiguard(ctx)
		kubeconfig := writeKubeconfig()
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("check-live-"+ns).Cluster())
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team", "pods", "5"), fixtures.ResourceList("pods", "0"))
		// Admitted and starting: holds 3 pods (a Launcher and 2 Workers)
		// through mpiguard's reservation, although no pod exists yet.
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "holder", rt.Name).NumNodes(2).Obj())).To(Succeed())

		candidates := map[string]*trainer.TrainJob{
			"fits":    fixtures.TrainJob(ns, "fits", rt.Name).NumNodes(1).Obj(),    // 2 pods: 3 + 2 = 5
			"too-big": fixtures.TrainJob(ns, "too-big", rt.Name).NumNodes(2).Obj(), // 3 pods: 3 + 3 > 5
		}
		file := filepath.Join(GinkgoT().TempDir(), "jobs.yaml")
		var docs []byte
		for _, name := range []string{"fits", "too-big"} {
			tj := candidates[name].DeepCopy()
			tj.APIVersion, tj.Kind = trainer.GroupVersion.String(), trainer.TrainJobKind
			y, err := yaml.Marshal(tj)
			Expect(err).NotTo(HaveOccurred())
			docs = append(append(docs, "---\n"...), y...)
		}
		Expect(os.WriteFile(file, docs, 0o600)).To(Succeed())

		By("mpiguard check --from-cluster -o json")
		cmd := exec.CommandContext(ctx, bin, "check", "--from-cluster", "-f", file, "-o", "json",
			"--kubeconfig", kubeconfig, "--mpiguard-namespace", env.PolicyNamespace)
		out, err := cmd.Output()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "a denial exits non-zero: %v\n%s", err, out)
		Expect(exit.ExitCode()).To(Equal(1), "exit 1: denied, no error; stderr:\n%s", exit.Stderr)
		var results []struct {
			TrainJob   string `json:"trainJob"`
			Allowed    bool   `json:"allowed"`
			Error      string `json:"error"`
			Violations []struct{ Policy, Action, Field, Message string }
		}
		Expect(json.Unmarshal(out, &results)).To(Succeed(), "%s", out)
		Expect(results).To(HaveLen(2))

		By("the same TrainJobs submitted with a server-side dry run: the same verdicts and messages")
		for _, r := range results {
			Expect(r.Error).To(BeEmpty())
			name := r.TrainJob[len(ns)+1:]
			err := env.Client.Create(ctx, candidates[name].DeepCopy(), client.DryRunAll)
			if r.Allowed {
				Expect(err).NotTo(HaveOccurred(), "check allowed %s, admission denied it", name)
				continue
			}
			Expect(err).To(HaveOccurred(), "check denied %s, admission allowed it", name)
			for _, v := range r.Violations {
				if v.Action == "deny" {
					Expect(err.Error()).To(ContainSubstring(v.Message), "admission's denial of %s carries check's message", name)
				}
			}
		}
		verdicts := map[string]bool{}
		for _, r := range results {
			verdicts[r.TrainJob] = r.Allowed
		}
		Expect(verdicts).To(Equal(map[string]bool{ns + "/fits": true, ns + "/too-big": false}),
			"the job that fits next to what \"holder\" holds is allowed, the other denied")
		Expect(out).To(ContainSubstring("aggregate-quota"))
	})

	It("judges a stored suspended TrainJob (kubectl get -o yaml) as its resume: the write admission would judge next", func(ctx context.Context) {
		bin := buildMpiguard(ctx)
		kubeconfig := writeKubeconfig()
		ns := env.Namespace(ctx, nil)
		rt := env.CreateClusterRuntime(ctx, fixtures.MPIRuntime("check-resume-"+ns).Cluster())
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "team", "pods", "4"), fixtures.ResourceList("pods", "0"))
		// Holds 3 pods; the suspended job needs 3 more when resumed.
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "holder", rt.Name).NumNodes(2).Obj())).To(Succeed())
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "waiting", rt.Name).NumNodes(2).Suspend(true).Obj())).To(Succeed(),
			"a suspended job starts nothing: its create is allowed")

		stored := &trainer.TrainJob{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "waiting"}, stored)).To(Succeed())
		stored.APIVersion, stored.Kind = trainer.GroupVersion.String(), trainer.TrainJobKind
		y, err := yaml.Marshal(stored)
		Expect(err).NotTo(HaveOccurred())

		By("kubectl get trainjob waiting -o yaml | mpiguard check --from-cluster -f -")
		cmd := exec.CommandContext(ctx, bin, "check", "--from-cluster", "-f", "-",
			"--kubeconfig", kubeconfig, "--mpiguard-namespace", env.PolicyNamespace)
		cmd.Stdin = bytes.NewReader(y)
		out, err := cmd.Output()
		var exit *exec.ExitError
		Expect(errors.As(err, &exit)).To(BeTrue(), "the resume does not fit: %v\n%s", err, out)
		Expect(exit.ExitCode()).To(Equal(1), "exit 1: denied; stderr:\n%s", exit.Stderr)
		Expect(string(out)).To(ContainSubstring("TrainJob %s/waiting: DENIED (judged as its resume", ns))
		Expect(string(out)).To(ContainSubstring("aggregate-quota"))

		By("the resume, submitted with a server-side dry run: admission denies it too")
		resumed := stored.DeepCopy()
		resumed.Spec.Suspend = ptr.To(false)
		Expect(env.Client.Update(ctx, resumed, client.DryRunAll)).To(MatchError(ContainSubstring("aggregate-quota")))
	})
})
