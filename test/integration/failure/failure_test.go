// Package failure proves on the local cluster where pods run (KWOK nodes,
// kube-scheduler, kube-controller-manager, JobSet and the Trainer) that a
// curated runtime's job whose Worker fails ends Failed at once, with the
// failed Worker's Job named, instead of hanging (runtimes/catalog: backoffLimit
// 0 and the JobSet failurePolicy).
package failure

import (
	"context"
	"slices"
	"testing"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/test/framework"
)

var env *framework.Env

func TestFailure(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Failure")
}

var _ = BeforeSuite(func(ctx context.Context) {
	components := app.DefaultOptions()
	env = framework.StartSuite(context.Background(), framework.Options{Name: "failure", Components: &components, Workloads: &framework.Workloads{}})
}, NodeTimeout(framework.SuiteStartTimeout))

// podAnnotations is a runtime patch (another manager's) that sets pod
// template annotations, per replicated job.
func podAnnotations(byReplicatedJob map[string]map[string]string) trainer.RuntimePatch {
	var rjs []trainer.ReplicatedJobPatch
	for _, name := range []string{"node", "launcher"} {
		rjs = append(rjs, trainer.ReplicatedJobPatch{Name: name, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
			Template: &trainer.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Annotations: byReplicatedJob[name]}},
		}}})
	}
	return trainer.RuntimePatch{
		Manager:             "example.com/chaos",
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: rjs}}},
	}
}

// curatedCopy creates a copy of a curated runtime, as published, with what
// JobSet's defaulting webhook (which the local cluster does not run) would
// add: the pods' restartPolicy OnFailure.
func curatedCopy(ctx context.Context, name string) *trainer.ClusterTrainingRuntime {
	GinkgoHelper()
	all, err := catalog.Load()
	Expect(err).NotTo(HaveOccurred())
	i := slices.IndexFunc(all, func(rt *trainer.ClusterTrainingRuntime) bool { return rt.Name == name })
	Expect(i).To(BeNumerically(">=", 0), "no curated runtime %s", name)
	rt := &trainer.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: "copy-of-" + name, Labels: all[i].Labels}, Spec: *all[i].Spec.DeepCopy()}
	for j := range rt.Spec.Template.Spec.ReplicatedJobs {
		rt.Spec.Template.Spec.ReplicatedJobs[j].Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}
	return env.CreateClusterRuntime(ctx, rt)
}

var _ = It("fails a curated runtime's job whose Worker fails, naming the Worker", func(ctx context.Context) {
	ns := env.Namespace(ctx, nil)
	rt := curatedCopy(ctx, "mpiguard-openmpi-v2")

	job := &trainer.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost-rank"},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: rt.Name},
			Trainer: &trainer.Trainer{NumNodes: ptr.To[int32](3), Args: []string{"python", "train.py"},
				ResourcesPerNode: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resourceOf("1"), corev1.ResourceMemory: *resourceOf("1Gi")}}},
			RuntimePatches: []trainer.RuntimePatch{podAnnotations(map[string]map[string]string{
				// The Worker crashes once Running (test/kwok/stages/pod-fail.yaml).
				"node": {"mpiguard.io/kwok-exit-code": "137", "mpiguard.io/kwok-exit-reason": "Error", "pod-complete.stage.kwok.x-k8s.io/weight": "0"},
				// The launcher keeps running: only the Worker's failure can end the job.
				"launcher": {"pod-complete.stage.kwok.x-k8s.io/weight": "0"},
			})},
		},
	}
	Expect(env.Client.Create(ctx, job)).To(Succeed())

	var failed *metav1.Condition
	Eventually(ctx, func(g Gomega) {
		got := &trainer.TrainJob{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), got)).To(Succeed())
		failed = meta.FindStatusCondition(got.Status.Conditions, trainer.TrainJobFailed)
		g.Expect(failed).NotTo(BeNil(), "TrainJob conditions: %v", got.Status.Conditions)
		g.Expect(failed.Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(3 * time.Minute).Should(Succeed())
	// The runtime's rule failed it, on the Worker's Job (JobSet's words).
	Expect(failed.Message).To(Equal("applying FailJobSet failure policy action (first failed job: lost-rank-node-0)"))
	GinkgoWriter.Printf("TrainJob Failed: %s: %s\n", failed.Reason, failed.Message)
})

func resourceOf(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
