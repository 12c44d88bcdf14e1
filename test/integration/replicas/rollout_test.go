package replicas

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

// oneHour replaces the embedded max-duration policy (ceiling 168 hours) with
// a 1-hour limit, as a compliance team could push it.
const oneHour = `package mpiguard.policies.max_duration

deny contains {"field": "spec.activeDeadlineSeconds", "msg": msg} if {
	input.trainJob.activeDeadlineSeconds > 3600
	msg := sprintf("compliance: at most 1 hour, this one asks for %d seconds; set spec.activeDeadlineSeconds to 3600 or less", [input.trainJob.activeDeadlineSeconds])
}
`

// outageSpecs prove what an mpiguard outage (failurePolicy: Fail) must never
// block, thanks to the webhooks' matchConditions: the Trainer removing its
// finalizer from a TrainJob being deleted, metadata-only updates, suspending.
func outageSpecs() {
	It("deletes a TrainJob, suspends one and updates labels while mpiguard is unreachable; spec changes fail", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("outage-"+ns))
		// The finalizer stands for the Trainer's, which it removes once the
		// TrainJob is being deleted.
		const finalizer = "test.mpiguard.io/cleanup"
		job := fixtures.TrainJob(ns, "doomed", rt.Name).NumNodes(1).Obj()
		job.Finalizers = []string{finalizer}
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		running := fixtures.TrainJob(ns, "preempted", rt.Name).NumNodes(1).Obj()
		Expect(env.Client.Create(ctx, running)).To(Succeed())

		env.Proxy.SetDown(true)
		DeferCleanup(func() { env.Proxy.SetDown(false) })

		// The outage is real: a spec change needs mpiguard, and fails.
		changed := job.DeepCopy()
		changed.Spec.ActiveDeadlineSeconds = 1800
		err := env.Client.Update(ctx, changed)
		Expect(err).To(HaveOccurred(), "a spec change was admitted with mpiguard unreachable")
		Expect(err.Error()).To(ContainSubstring("failed calling webhook"))

		// Metadata only: labels.
		Expect(env.Client.Patch(ctx, job, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"vision"}}}`)))).
			To(Succeed(), "a label update needs mpiguard")
		// Suspending, as Kueue preempts.
		Expect(env.Client.Patch(ctx, running, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).
			To(Succeed(), "suspending a job needs mpiguard")

		// Deleting: the TrainJob stays until its finalizer is removed, and
		// removing it (an update of an object being deleted) must pass.
		Expect(env.Client.Delete(ctx, job)).To(Succeed())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		Expect(job.DeletionTimestamp).NotTo(BeNil())
		Expect(env.Client.Patch(ctx, job, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`)))).
			To(Succeed(), "removing the finalizer of a TrainJob being deleted needs mpiguard")
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKeyFromObject(job), &trainer.TrainJob{})
		}).WithContext(ctx).Should(MatchError(ContainSubstring("not found")))
	})
}

// rolloutSpecs prove what a rollout relies on: a new pod is ready only when
// it can decide as the others do, and only the leader reports policy status.
func rolloutSpecs() {
	It("answers reviews fired the moment a fresh replica is ready with decisions of the ConfigMap policies", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, fixtures.MPIRuntime("fresh-"+ns))
		cm := policyConfigMap(ctx, "rollout-max-duration", oneHour)
		twoHours := fixtures.TrainJob(ns, "two-hours", rt.Name).NumNodes(1).ActiveDeadlineSeconds(7200).Obj()
		// The running replicas enforce the ConfigMap's policy.
		Eventually(func() error {
			return env.Client.Create(ctx, twoHours.DeepCopy(), client.DryRunAll)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(MatchError(ContainSubstring("compliance: at most 1 hour")))
		DeferCleanup(func(ctx context.Context) {
			Expect(env.Client.Delete(ctx, cm)).To(Succeed())
			Eventually(func() error {
				return env.Client.Create(ctx, twoHours.DeepCopy(), client.DryRunAll)
			}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the replicas went back to the embedded policy")
		})

		fresh, err := env.StartExtraReplica(ctx)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(fresh.Stop()).To(Succeed()) })
		certs := clientCerts()

		// Poll readiness as the kubelet does, only faster, and fire the
		// moment it passes.
		probe := &http.Client{Timeout: time.Second}
		var readyBody string
		Eventually(func() int {
			res, err := probe.Get("http://" + fresh.ProbeAddr + "/readyz?verbose")
			if err != nil {
				return 0
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			readyBody = string(b)
			return res.StatusCode
		}).WithContext(ctx).WithTimeout(60*time.Second).WithPolling(5*time.Millisecond).Should(Equal(http.StatusOK), "the fresh replica never became ready")
		// Everything a decision reads is in the cache already: no review has
		// to wait for a list, or fail with a cache error.
		for _, obj := range []client.Object{
			&trainer.TrainJob{}, &trainer.ClusterTrainingRuntime{}, &trainer.TrainingRuntime{},
			&corev1.Namespace{}, &corev1.ResourceQuota{}, &corev1.LimitRange{}, &nodev1.RuntimeClass{},
			&corev1.Pod{}, &quotav1alpha1.QuotaReservation{}, &corev1.ConfigMap{},
		} {
			inf, err := fresh.Manager.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
			Expect(err).NotTo(HaveOccurred())
			Expect(inf.HasSynced()).To(BeTrue(), "the fresh replica was ready with its %T cache not synced (readyz: %s)", obj, readyBody)
		}
		const reviews = 8
		answers := make([]*admissionv1.AdmissionResponse, reviews)
		errs := make([]error, reviews)
		var wg sync.WaitGroup
		for i := range reviews {
			wg.Go(func() {
				j := twoHours.DeepCopy()
				j.Name = fmt.Sprintf("two-hours-%d", i)
				answers[i], errs[i] = reviewAt(fresh.Addr, j, certs, true)
			})
		}
		wg.Wait()
		for i := range reviews {
			Expect(errs[i]).NotTo(HaveOccurred(), "review %d", i)
			Expect(answers[i].Allowed).To(BeFalse(), "review %d was allowed: the fresh replica decided without the ConfigMap policies (readyz: %s)", i, readyBody)
			Expect(answers[i].Result).NotTo(BeNil())
			Expect(answers[i].Result.Code).To(Equal(int32(http.StatusForbidden)), "review %d: %s", i, answers[i].Result.Message)
			Expect(answers[i].Result.Message).To(ContainSubstring("compliance: at most 1 hour"), "review %d", i)
		}
		Expect(readyBody).To(And(ContainSubstring("[+]caches ok"), ContainSubstring("[+]policies ok")))
	})

	It("has only the leader write the policy status and events, once per change", func(ctx context.Context) {
		cm := policyConfigMap(ctx, "rollout-broken", "package mpiguard.policies.rollout_broken\n\ndeny contains msg if {\n\tmsg := nope(1)\n}\n")
		DeferCleanup(func(ctx context.Context) { Expect(env.Client.Delete(ctx, cm)).To(Succeed()) })
		Eventually(func() string {
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
			return cm.Annotations["mpiguard.io/policy-status"]
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(HavePrefix("rejected: "))
		rejections := func() []string {
			var events eventsv1.EventList
			Expect(env.Client.List(ctx, &events, client.InNamespace(env.PolicyNamespace))).To(Succeed())
			var out []string
			for _, e := range events.Items {
				if e.Regarding.Name == cm.Name && e.Reason == "PolicyRejected" {
					n := int32(1)
					if e.Series != nil {
						n = e.Series.Count
					}
					out = append(out, fmt.Sprintf("%s x%d", e.Name, n))
				}
			}
			return out
		}
		// Events are written asynchronously: give every replica time to.
		Eventually(rejections).WithContext(ctx).WithTimeout(10 * time.Second).ShouldNot(BeEmpty())
		rv := cm.ResourceVersion
		Consistently(func(g Gomega) {
			g.Expect(rejections()).To(ConsistOf(HaveSuffix(" x1")), "PolicyRejected events: one, from the leader")
			var now corev1.ConfigMap
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &now)).To(Succeed())
			g.Expect(now.ResourceVersion).To(Equal(rv), "the ConfigMap keeps being written: %v", now.Annotations)
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
}

// policyConfigMap creates a Rego policy ConfigMap in mpiguard's namespace.
func policyConfigMap(ctx context.Context, name, rego string) *corev1.ConfigMap {
	GinkgoHelper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: name, Labels: map[string]string{"mpiguard.io/policy": "rego"}},
		Data:       map[string]string{strings.ReplaceAll(name, "-", "_") + ".rego": rego},
	}
	Expect(env.Client.Create(ctx, cm)).To(Succeed())
	return cm
}

// clientCerts are what the apiserver presents to the webhooks when the suite
// runs with client authentication; none otherwise.
func clientCerts() []tls.Certificate {
	GinkgoHelper()
	if env.WebhookClientCA == nil {
		return nil
	}
	_, _, pair, err := env.WebhookClientCA.Issue(framework.WebhookClientName)
	Expect(err).NotTo(HaveOccurred())
	return []tls.Certificate{pair}
}

// reviewAt sends a CREATE review of job straight to the validating webhook at
// addr, presenting certs, as the apiserver would (or any pod that reaches the
// port), and returns the answer.
func reviewAt(addr string, job *trainer.TrainJob, certs []tls.Certificate, dryRun bool) (*admissionv1.AdmissionResponse, error) {
	req, err := framework.TrainJobReview(admissionv1.Create, job, nil, "system:serviceaccount:"+job.Namespace+":default")
	if err != nil {
		return nil, err
	}
	req.DryRun = ptr.To(dryRun)
	return framework.PostReview(addr, trainjob.ValidatePath, req, certs)
}
