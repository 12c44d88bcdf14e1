package admission

import (
	"context"
	"fmt"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// Pod Security admission refuses pods, not TrainJobs: without mpiguard a
// TrainJob in a namespace enforcing "restricted" is stored and then hangs
// with a FailedCreate event on a Job. mpiguard predicts the refusal at
// submit (policies/pod-security). Each spec also hands the rendered pods to
// the apiserver's own PodSecurity admission (a dry-run pod create): the
// prediction must be what the apiserver says.
var _ = Describe("Pod Security predicted at submit", func() {
	restricted := map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}
	var renderer *render.Renderer
	BeforeEach(func(ctx context.Context) {
		var err error
		renderer, err = render.NewRenderer(ctx)
		Expect(err).NotTo(HaveOccurred())
	})

	It("denies a TrainJob whose runtime's pods the enforced level refuses, with the apiserver's reasons, the fields and a fix", func(ctx context.Context) {
		ns := env.Namespace(ctx, restricted)
		rt := createRuntime(ctx, fixtures.MPIRuntime("psa-plain-"+ns))
		job := fixtures.TrainJob(ns, "plain", rt.Name).NumNodes(2).Obj()
		pods := renderedPods(ctx, renderer, job, rt)

		msg := denial(ctx, job)
		for _, rj := range []struct{ name, who string }{{"launcher", "the Launcher"}, {"node", "the Workers"}} {
			// What PodSecurity admission itself says about this replicated job's pods.
			reasons := podSecurityRefusal(ctx, ns, pods[rj.name])
			prefix := fmt.Sprintf(
				`[pod-security] spec.replicatedJobs[%s].template.spec.template.spec: pods of %s (replicated job %q) would violate PodSecurity "restricted:latest", which namespace %s enforces (label pod-security.kubernetes.io/enforce): the apiserver would refuse them`,
				rj.name, rj.who, rj.name, ns)
			Expect(msg).To(ContainSubstring(prefix))
			_, line, _ := strings.Cut(msg, prefix)
			line, _, _ = strings.Cut(line, "\n")
			_, failed, ok := strings.Cut(line, "failed checks: ")
			Expect(ok).To(BeTrue(), "no failed checks in %q", line)
			failed, _, _ = strings.Cut(failed, " (see ") // the last line ends with its docs link
			for _, name := range checkNames(reasons) {
				Expect(strings.Split(failed, ", ")).To(ContainElement(name), "the apiserver's check %q is missing from %q", name, failed)
			}
		}
		Expect(msg).To(ContainSubstring("set securityContext.runAsNonRoot: true on the pod"))
		Expect(msg).To(ContainSubstring("set securityContext.seccompProfile.type: RuntimeDefault on the pod"))
		Expect(msg).To(ContainSubstring(fmt.Sprintf(`in ClusterTrainingRuntime %q (a cluster admin's fix; curated runtimes meet "restricted") or with spec.runtimePatches`, rt.Name)))
	})

	It("admits every curated runtime there, whose pods the apiserver admits too", func(ctx context.Context) {
		ns := env.Namespace(ctx, restricted)
		// The curated Volcano variants' gangs go to Volcano's queue
		// "default", which Volcano's installation creates.
		env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue("default", volcanov1beta1.QueueStateOpen, "", "0"))
		all, err := catalog.Load()
		Expect(err).NotTo(HaveOccurred())
		for i, want := range all {
			rt := &trainer.ClusterTrainingRuntime{}
			Eventually(func() error {
				return env.Client.Get(ctx, client.ObjectKeyFromObject(want), rt)
			}).Should(Succeed(), "curated runtime %s was not published", want.Name)
			job := fixtures.TrainJob(ns, fmt.Sprintf("curated-%d", i), rt.Name).NumNodes(3).Obj()
			Expect(env.Client.Create(ctx, job.DeepCopy(), client.DryRunAll)).To(Succeed(), "TrainJob on %s denied in a restricted namespace", rt.Name)
			for name, pod := range renderedPods(ctx, renderer, job, rt) {
				Expect(dryRunPod(ctx, ns, pod)).To(Succeed(), "the apiserver refuses the %s pods of %s", name, rt.Name)
			}
		}
	})

	It("admits with warnings where the namespace only warns about the level", func(ctx context.Context) {
		ns := env.Namespace(ctx, map[string]string{"pod-security.kubernetes.io/warn": "restricted"})
		rt := createRuntime(ctx, fixtures.MPIRuntime("psa-warn-"+ns))
		w := &warningsSeen{}
		warned := clientWithWarnings(w)
		Expect(warned.Create(ctx, fixtures.TrainJob(ns, "warned", rt.Name).NumNodes(2).Obj())).To(Succeed())
		Expect(w.list).To(ContainElement(And(
			ContainSubstring(`[pod-security]`),
			ContainSubstring(`pods of the Workers (replicated job "node") would violate PodSecurity "restricted:latest", which namespace %s warns about (label pod-security.kubernetes.io/warn)`, ns),
			ContainSubstring(`runAsNonRoot != true`),
		)))
	})

	It("warns a user whose spec.trainer.image only the launcher runs, naming the Workers' image", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := &trainer.ClusterTrainingRuntime{}
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Name: "mpiguard-openmpi"}, rt)
		}).Should(Succeed())
		workers := rt.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image
		w := &warningsSeen{}
		Expect(clientWithWarnings(w).Create(ctx, fixtures.TrainJob(ns, "own-image", rt.Name).NumNodes(2).Image("registry.example.com/team-a/train:v3").Obj())).To(Succeed())
		Expect(w.list).To(ContainElement(And(
			ContainSubstring(`[worker-image] spec.trainer.image: the Workers will not run image "registry.example.com/team-a/train:v3"`),
			ContainSubstring(`keep image %q`, workers),
		)))
	})
})

// renderedPods renders job on rt as the Trainer will (the apiserver's CRD
// defaults applied), by replicated job name.
func renderedPods(ctx context.Context, r *render.Renderer, job *trainer.TrainJob, rt *trainer.ClusterTrainingRuntime) map[string]corev1.PodTemplateSpec {
	GinkgoHelper()
	job, rt = job.DeepCopy(), rt.DeepCopy()
	Expect(render.ApplyDefaults(job, rt)).To(Succeed())
	view, err := r.Render(ctx, render.Input{TrainJob: job, Runtime: rt})
	Expect(err).NotTo(HaveOccurred())
	out := map[string]corev1.PodTemplateSpec{}
	for _, rj := range view.ReplicatedJobs {
		out[rj.Name] = rj.PodTemplate
	}
	return out
}

// dryRunPod dry-runs the creation of a pod from tpl in ns, as the Job
// controller would create it: PodSecurity admission judges it.
func dryRunPod(ctx context.Context, ns string, tpl corev1.PodTemplateSpec) error {
	GinkgoHelper()
	// envtest runs no service account controller; the ServiceAccount
	// admission plugin needs the pod's account to exist.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	if err := env.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	pod.Namespace, pod.GenerateName = ns, "psa-"
	return env.Client.Create(ctx, pod, client.DryRunAll)
}

// podSecurityRefusal returns the reasons the apiserver's PodSecurity
// admission gives for refusing a pod from tpl: what follows
// `violates PodSecurity "<level>:<version>": ` in its error.
func podSecurityRefusal(ctx context.Context, ns string, tpl corev1.PodTemplateSpec) string {
	GinkgoHelper()
	err := dryRunPod(ctx, ns, tpl)
	Expect(err).To(HaveOccurred(), "the apiserver admits the pod")
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a Pod Security refusal, got %v", err)
	_, reasons, ok := strings.Cut(err.Error(), `violates PodSecurity "restricted:latest": `)
	Expect(ok).To(BeTrue(), "not a Pod Security refusal: %v", err)
	return reasons
}

// checkNames are the names of the checks of a Pod Security refusal
// ("allowPrivilegeEscalation != false (container ...), seccompProfile (...)"),
// without their details.
func checkNames(reasons string) []string {
	var names []string
	for reasons != "" {
		name, rest, _ := strings.Cut(reasons, " (")
		names = append(names, name)
		// The detail ends at the parenthesis that closes it.
		depth := 1
		i := 0
		for ; i < len(rest) && depth > 0; i++ {
			switch rest[i] {
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		reasons = strings.TrimPrefix(rest[i:], ", ")
	}
	return names
}

// clientWithWarnings is a client whose admission warnings land in w.
func clientWithWarnings(w *warningsSeen) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandlerWithContext = w
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}
