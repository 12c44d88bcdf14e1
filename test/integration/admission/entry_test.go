package admission

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// withEnvOnWorkers is a runtime patch under manager setting env on the
// Workers' node container.
func withEnvOnWorkers(manager, name, value string) trainer.RuntimePatch {
	return trainer.RuntimePatch{
		Manager: manager,
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{
			Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: []trainer.ReplicatedJobPatch{{
				Name: "node",
				Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: &trainer.PodTemplatePatch{
					Spec: &trainer.PodSpecPatch{Containers: []trainer.ContainerPatch{{Name: "node", Env: []corev1.EnvVar{{Name: name, Value: value}}}}},
				}}},
			}}},
		}},
	}
}

// mpiguard's own spec.runtimePatches entry (manager mpiguard.io/admission)
// through the real apiserver: nobody else may write under that name, and it
// does not hide what the user asked for from the policies.
var _ = Describe("mpiguard's own runtime patch entry", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = env.Namespace(ctx, nil) })

	It("denies an entry posing as mpiguard's that sets reserved MPI env", func(ctx context.Context) {
		rt := createRuntime(ctx, fixtures.MPIRuntime("posing-"+ns))
		msg := denial(ctx, fixtures.TrainJob(ns, "posing", rt.Name).NumNodes(2).
			RuntimePatch(withEnvOnWorkers("mpiguard.io/admission", "OMPI_MCA_plm_rsh_args", "-p 2222")).Obj())
		Expect(msg).To(ContainSubstring("[mpiguard-entry] spec.runtimePatches[0]: spec.runtimePatches[0] has manager mpiguard.io/admission, which is reserved for mpiguard's own entry, but sets spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template.spec.template.spec.containers, which mpiguard never writes"))
		Expect(msg).To(ContainSubstring("remove the runtimePatches entry with manager mpiguard.io/admission or give it a manager of your own; mpiguard writes its entry itself"))
		Expect(msg).To(ContainSubstring("[slots-gpus]"))
		Expect(msg).To(ContainSubstring("sets OMPI_MCA_plm_rsh_args, which the MPI plugin reserves"))
	})

	It("denies an UPDATE that changes the entry mpiguard stored", func(ctx context.Context) {
		rt := createRuntime(ctx, fixtures.MPIRuntime("posing-update-"+ns))
		// Suspended: other policies' denials of a job that stays suspended
		// wait for its resume, but a changed entry would then be the stored
		// one, taken for mpiguard's: it is denied now.
		job := admitted(ctx, fixtures.TrainJob(ns, "relabelled", rt.Name).NumNodes(1).Suspend(true).Obj())
		own := mpiguardPatch(job)
		Expect(own).NotTo(BeNil())
		pod := podTemplatePatch(own, "node")
		pod.Metadata.Labels["team"] = "vision"
		err := env.Client.Update(ctx, job)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("[mpiguard-entry]"))
		Expect(err.Error()).To(ContainSubstring("is not mpiguard's entry for this TrainJob (it differs at spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[1].template.spec.template.metadata.labels[team])"))
	})

	It("keeps other managers' entries as sent and appends its own after them", func(ctx context.Context) {
		rt := createRuntime(ctx, fixtures.MPIRuntime("entry-order-"+ns))
		user := userPatch("node", map[string]string{"team": "vision"}, nil)
		stored := admitted(ctx, fixtures.TrainJob(ns, "ordered", rt.Name).NumNodes(1).RuntimePatch(user).Obj())
		Expect(stored.Spec.RuntimePatches).To(HaveLen(2))
		Expect(stored.Spec.RuntimePatches[0].Manager).To(Equal(user.Manager))
		Expect(stored.Spec.RuntimePatches[0].TrainingRuntimeSpec).To(Equal(user.TrainingRuntimeSpec))
		Expect(stored.Spec.RuntimePatches[1].Manager).To(Equal("mpiguard.io/admission"))
		Expect(podTemplatePatch(&stored.Spec.RuntimePatches[1], "node").Metadata.Labels).To(HaveKeyWithValue("sidecar.istio.io/inject", "false"))
	})

	It("replaces a stale entry of its own shape in place", func(ctx context.Context) {
		rt := createRuntime(ctx, fixtures.MPIRuntime("entry-stale-"+ns))
		stale := userPatch("node", map[string]string{"sidecar.istio.io/inject": "false"}, nil)
		stale.Manager = "mpiguard.io/admission"
		user := userPatch("launcher", map[string]string{"team": "vision"}, nil)
		stored := admitted(ctx, fixtures.TrainJob(ns, "stale", rt.Name).NumNodes(1).RuntimePatch(stale).RuntimePatch(user).Obj())
		Expect(stored.Spec.RuntimePatches).To(HaveLen(2))
		Expect(stored.Spec.RuntimePatches[0].Manager).To(Equal("mpiguard.io/admission"))
		for _, rj := range []string{"launcher", "node"} {
			Expect(podTemplatePatch(&stored.Spec.RuntimePatches[0], rj).Metadata.Labels).To(Equal(map[string]string{
				"sidecar.istio.io/inject": "false", "istio.io/dataplane-mode": "none",
			}))
		}
		Expect(stored.Spec.RuntimePatches[1].TrainingRuntimeSpec).To(Equal(user.TrainingRuntimeSpec))
	})

	It("denies a runtime patch that opts the Workers into the sidecar, though mpiguard's label would override it", func(ctx context.Context) {
		rt := createRuntime(ctx, fixtures.MPIRuntime("opt-in-"+ns))
		msg := denial(ctx, fixtures.TrainJob(ns, "mesh", rt.Name).NumNodes(1).
			RuntimePatch(userPatch("node", map[string]string{"sidecar.istio.io/inject": "true"}, nil)).Obj())
		Expect(msg).To(ContainSubstring(`[istio-opt-out] spec.runtimePatches: the Worker pods opt in to the Istio mesh (labels sidecar.istio.io/inject="true")`))
		Expect(msg).To(ContainSubstring("remove sidecar.istio.io/inject from the pod template in spec.runtimePatches"))
	})

	It("denies a runtime whose Worker template opts into the sidecar", func(ctx context.Context) {
		b := fixtures.MPIRuntime("opt-in-runtime-" + ns)
		runtime := b.Cluster()
		runtime.Spec.Template.Spec.ReplicatedJobs[1].Template.Spec.Template.ObjectMeta = metav1.ObjectMeta{Labels: map[string]string{"sidecar.istio.io/inject": "true"}}
		rt := env.CreateClusterRuntime(ctx, runtime)
		msg := denial(ctx, fixtures.TrainJob(ns, "mesh", rt.Name).NumNodes(1).Obj())
		// The TrainJob has no runtime patch to fix: the denial names the
		// runtime and who fixes it.
		Expect(msg).To(ContainSubstring(`[istio-opt-out] spec.runtimeRef: the Worker pods opt in to the Istio mesh (labels sidecar.istio.io/inject="true")`))
		Expect(msg).To(ContainSubstring(fmt.Sprintf(`this comes from ClusterTrainingRuntime %q (the TrainJob has no runtime patches of its own): ask a cluster admin to remove sidecar.istio.io/inject`, rt.Name)))
	})
})
