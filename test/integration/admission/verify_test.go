package admission

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/framework"
)

var _ = Describe("the README's install verification", func() {
	It("a server-side dry run of docs/examples/verify-install.yaml returns mpiguard's denial, as the README shows it", func(ctx context.Context) {
		root := framework.RepoRoot()
		data, err := os.ReadFile(filepath.Join(root, "docs/examples/verify-install.yaml"))
		Expect(err).NotTo(HaveOccurred())
		job := &trainer.TrainJob{}
		Expect(yaml.UnmarshalStrict(data, job)).To(Succeed())
		readme, err := os.ReadFile(filepath.Join(root, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		var shown []string // the denial's lines the README shows
		for _, line := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(line, "- [max-duration] spec.activeDeadlineSeconds: TrainJob may run for 200 hours") {
				shown = append(shown, line)
			}
		}
		Expect(shown).To(HaveLen(1), "README.md \"Verifying an install\" shows no max-duration denial")

		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: job.Spec.RuntimeRef.Name}, &trainer.ClusterTrainingRuntime{})
		}).Should(Succeed(), "the curated runtime %s is not published", job.Spec.RuntimeRef.Name)
		err = env.Client.Create(ctx, job, client.DryRunAll)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want mpiguard's denial, got %v", err)
		Expect(err.Error()).To(ContainSubstring(`admission webhook "vtrainjob.mpiguard.io" denied the request: TrainJob default/mpiguard-verify violates 1 mpiguard policy:`))
		Expect(err.Error()).To(HaveSuffix(shown[0][2:]))
	})
})
