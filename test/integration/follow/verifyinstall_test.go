package follow

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mpiguard/mpiguard/test/framework"
)

// verifySection is the README section whose commands the spec runs.
const verifySection = "Verifying an install"

var _ = Describe("the README's install verification", func() {
	It("runs as written against mpiguard installed: the shipped Deployment becomes Available, and the dry-run TrainJob gets mpiguard's denial as the README prints it", func(ctx context.Context) {
		commands, shown := readmeSection(verifySection)
		Expect(commands).NotTo(BeEmpty(), "README.md %q shows no commands", verifySection)

		By("the Deployment config/default ships, with an image set as make deploy sets it, in mpiguard's namespace; its pods run on the KWOK nodes")
		installShippedDeployment(ctx)
		// The webhooks the README's dry run reaches are config/webhook's, served
		// by the suite's mpiguard, which publishes the curated runtimes.
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: "mpiguard-openmpi"}, &trainer.ClusterTrainingRuntime{})
		}, time.Minute).Should(Succeed(), "the curated runtime mpiguard-openmpi is published")

		By("each README command, as written, from the repository root, kubectl pointed at the cluster by KUBECONFIG")
		kubeconfig := adminKubeconfig()
		var printed bytes.Buffer
		for _, cmd := range commands {
			c := exec.CommandContext(ctx, "bash", "-c", cmd)
			c.Dir = framework.RepoRoot()
			c.Env = kubectlEnv(kubeconfig)
			// One writer for both streams: they interleave as on a terminal.
			c.Stdout, c.Stderr = &printed, &printed
			err := c.Run()
			GinkgoWriter.Printf("$ %s (%v)\n", cmd, err)
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				Fail(err.Error())
			}
		}
		Expect(printed.String()).To(Equal(shown), "README.md %q shows another output than its commands print", verifySection)
	})
})

// readmeSection returns the commands of the first ```sh block of the
// README's section heading, one a line, and the block after it: what they
// print.
func readmeSection(heading string) (commands []string, output string) {
	GinkgoHelper()
	f, err := os.Open(filepath.Join(framework.RepoRoot(), "README.md"))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	var (
		in, fenced bool
		blocks     []string
		info       []string
		body       strings.Builder
	)
	for scanner := bufio.NewScanner(f); scanner.Scan(); {
		line := scanner.Text()
		switch {
		case !fenced && strings.HasPrefix(line, "## "):
			in = strings.TrimPrefix(line, "## ") == heading
		case !in:
		case strings.HasPrefix(line, "```") && !fenced:
			fenced = true
			info = append(info, strings.TrimPrefix(line, "```"))
			body.Reset()
		case strings.HasPrefix(line, "```"):
			fenced = false
			blocks = append(blocks, body.String())
		case fenced:
			body.WriteString(line + "\n")
		}
	}
	Expect(len(blocks)).To(BeNumerically(">=", 2), "README.md %q: want a ```sh block and its output", heading)
	Expect(info[0]).To(Equal("sh"))
	for _, line := range strings.Split(strings.TrimSpace(blocks[0]), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commands = append(commands, line)
		}
	}
	return commands, blocks[1]
}

// installShippedDeployment creates mpiguard's Deployment as config/default
// renders it, with an image set.
func installShippedDeployment(ctx context.Context) {
	GinkgoHelper()
	shipped, err := framework.KustomizeBuild("config/default")
	Expect(err).NotTo(HaveOccurred())
	var deployment *appsv1.Deployment
	for _, o := range shipped {
		if o.GetKind() != "Deployment" {
			continue
		}
		deployment = &appsv1.Deployment{}
		Expect(k8sruntime.DefaultUnstructuredConverter.FromUnstructured(o.Object, deployment)).To(Succeed())
	}
	Expect(deployment).NotTo(BeNil(), "config/default renders no Deployment")
	Expect(deployment.Namespace).To(Equal(env.PolicyNamespace))
	for i := range deployment.Spec.Template.Spec.Containers {
		deployment.Spec.Template.Spec.Containers[i].Image = "registry.example.com/mpiguard:v0.1.0"
	}
	Expect(env.Client.Create(ctx, deployment)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, deployment)).To(Succeed()) })
}

// adminKubeconfig writes a kubeconfig of the suite's apiserver for an
// administrator, as a user who installed mpiguard has.
func adminKubeconfig() string {
	GinkgoHelper()
	user, err := env.Testenv.AddUser(envtest.User{Name: "verify-admin", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kc, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "kubeconfig")
	Expect(os.WriteFile(path, kc, 0o600)).To(Succeed())
	return path
}

// kubectlEnv is the environment of a documented kubectl command: KUBECONFIG
// names the suite's cluster, and the kubectl `make controlplane` builds (the
// apiserver's version) comes first on PATH.
func kubectlEnv(kubeconfig string) []string {
	GinkgoHelper()
	assets, err := framework.BinaryAssets()
	Expect(err).NotTo(HaveOccurred())
	_, err = os.Stat(filepath.Join(assets, "kubectl"))
	Expect(err).NotTo(HaveOccurred(), "kubectl is not in %s: run make controlplane", assets)
	var environ []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "KUBECONFIG":
		case "PATH":
			environ = append(environ, "PATH="+assets+string(os.PathListSeparator)+v)
		default:
			environ = append(environ, kv)
		}
	}
	return append(environ, "KUBECONFIG="+kubeconfig)
}
