package runtimes

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/mpiguard/mpiguard/test/framework"
)

var _ = Describe("The Trainer's own runtimes", func() {
	It("are admitted by the template webhook; only the MPI ones (DeepSpeed, MLX) are governed, and they are warned about Istio", func(ctx context.Context) {
		dir, err := framework.TrainerRuntimes()
		Expect(err).NotTo(HaveOccurred())
		c, w := warningClient()
		var mpi []string
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") || d.Name() == "kustomization.yaml" {
				return err
			}
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			var rt trainer.ClusterTrainingRuntime
			Expect(yaml.Unmarshal(data, &rt)).To(Succeed(), path)
			if rt.Kind != trainer.ClusterTrainingRuntimeKind {
				return nil
			}
			By(rt.Name)
			Expect(c.Create(ctx, &rt)).To(Succeed(), path)
			got := w.take()
			if rt.Spec.MLPolicy != nil && rt.Spec.MLPolicy.MPI != nil {
				mpi = append(mpi, rt.Name)
				Expect(got).To(ConsistOf(
					ContainSubstring(`the "node" pods have no Istio sidecar opt-out`),
					ContainSubstring(`the "node" pods have no Istio ambient opt-out`),
					ContainSubstring(`the "launcher" pods have no Istio sidecar opt-out`),
					ContainSubstring(`the "launcher" pods have no Istio ambient opt-out`),
					// Upstream pins runAsUser 1000 and nothing else Pod Security "restricted" asks for.
					ContainSubstring(`spec.template.spec.replicatedJobs[0].template.spec.template.spec: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`),
					ContainSubstring(`spec.template.spec.replicatedJobs[1].template.spec.template.spec: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false`),
				), rt.Name)
			} else {
				Expect(got).To(BeEmpty(), "a non-MPI runtime is not governed: %s", rt.Name)
			}
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(mpi).To(ConsistOf("deepspeed-distributed", "mlx-distributed"))
	})
})
