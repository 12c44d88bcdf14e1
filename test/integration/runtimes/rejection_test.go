package runtimes

import (
	"context"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// Pods refused at creation leave no pod behind: only the Job controller's
// FailedCreate event says why. Here every part is real: the Trainer renders
// the TrainJob into a JobSet, JobSet's controller makes it Jobs,
// kube-controller-manager's Job controller tries to create the pods, and the
// kube-apiserver's own Pod Security admission refuses them.
var _ = Describe("RuntimeTest whose pods the apiserver refuses", func() {
	It("names Pod Security's reasons from the Job controller's FailedCreate, not a Timeout", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		runtime := unhardenedRuntime(ns)
		Expect(env.Client.Create(ctx, runtime)).To(Succeed())
		rt, k := smokeTest(ctx, ns, "podsecurity", func(rt *api.RuntimeTest) {
			rt.Spec.RuntimeRef = api.RuntimeRef{Kind: trainer.TrainingRuntimeKind, Name: runtime.Name}
		})
		// Enforced once the TrainJob is admitted: in a namespace already
		// enforcing "restricted", mpiguard's submit-time check would deny the
		// TrainJob itself (the admission suite tests that). This is what that
		// check cannot see: a namespace tightened after submission, or a
		// cluster without mpiguard's check.
		var namespace corev1.Namespace
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, &namespace)).To(Succeed())
		patch := client.MergeFrom(namespace.DeepCopy())
		namespace.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
		namespace.Labels["pod-security.kubernetes.io/enforce-version"] = "latest"
		Expect(env.Client.Patch(ctx, &namespace, patch)).To(Succeed())
		env.JobSetController(ctx, ns)

		// The test's timeout is the default 10 minutes: the verdict must come
		// from the event, within a minute.
		Expect(rt.Spec.TimeoutSeconds).To(BeEquivalentTo(600))
		nodeJob := k.jobSet.Name + "-node-0"
		Eventually(succeeded(ctx, rt), time.Minute, interval).Should(And(Not(BeNil()),
			HaveField("Reason", api.ReasonPodSecurity),
			HaveField("Message", And(
				ContainSubstring("Job "+nodeJob+" cannot create its pods (FailedCreate"),
				ContainSubstring(`violates PodSecurity "restricted:latest"`),
				ContainSubstring(`allowPrivilegeEscalation != false (container "node" must set securityContext.allowPrivilegeEscalation=false)`),
				ContainSubstring("namespace "+ns+" enforces a Pod Security level")))))
		Expect(rt.Status.Phase).To(Equal(api.PhaseFailed))
		Expect(meta.FindStatusCondition(rt.Status.Conditions, api.ConditionPodsScheduled)).To(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", api.ReasonPodSecurity)))

		// The cause was the real Job controller's event on the real Job.
		var job batchv1.Job
		Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: nodeJob}, &job)).To(Succeed())
		var events corev1.EventList
		Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
		Expect(events.Items).To(ContainElement(And(
			HaveField("Reason", "FailedCreate"),
			HaveField("Source.Component", "job-controller"),
			HaveField("InvolvedObject.UID", job.UID))))
		trainJobGone(ctx, rt)
		Eventually(eventNotes(ctx, ns, rt.Name), timeout, interval).Should(ContainElement(ContainSubstring("PodSecurity: runtime " + runtime.Name + ": Job " + nodeJob)))
	})
})

// unhardenedRuntime is the curated OpenMPI runtime as a TrainingRuntime in
// ns with every securityContext removed, so that its pods fail Pod Security
// "restricted" (allowPrivilegeEscalation, capabilities, runAsNonRoot,
// seccompProfile) whatever the curated one sets. Its pod templates say what
// JobSet's webhook, which the framework does not run, would default.
func unhardenedRuntime(ns string) *trainer.TrainingRuntime {
	GinkgoHelper()
	all, err := catalog.Load()
	Expect(err).NotTo(HaveOccurred())
	var curated *trainer.ClusterTrainingRuntime
	for _, rt := range all {
		if rt.Name == "mpiguard-openmpi-v2" {
			curated = rt
		}
	}
	Expect(curated).NotTo(BeNil())
	out := &trainer.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "openmpi-unhardened", Labels: curated.Labels},
		Spec:       *curated.Spec.DeepCopy(),
	}
	for i := range out.Spec.Template.Spec.ReplicatedJobs {
		job := &out.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec
		job.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		pod := &job.Template.Spec
		pod.RestartPolicy = corev1.RestartPolicyOnFailure
		pod.SecurityContext = nil
		for c := range pod.Containers {
			pod.Containers[c].SecurityContext = nil
		}
		for c := range pod.InitContainers {
			pod.InitContainers[c].SecurityContext = nil
		}
	}
	return out
}
