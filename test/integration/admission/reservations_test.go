package admission

import (
	"context"
	"fmt"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations/store"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

var _ = Describe("quota reservations", func() {
	It("admit exactly one of two concurrent resumes that together exceed the quota, in each of 10 rounds", func(ctx context.Context) {
		for round := range 10 {
			ns := env.Namespace(ctx, nil)
			rt := createRuntime(ctx, gpuWorkers(fmt.Sprintf("resumes-%d-%s", round, ns), "4"))
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
			jobs := make([]*trainer.TrainJob, 2)
			for i := range jobs {
				jobs[i] = admitted(ctx, fixtures.TrainJob(ns, fmt.Sprintf("queued-%d", i), rt.Name).NumNodes(2).NumProcPerNode(4).Suspend(true).Obj())
			}
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				resumed []string
			)
			start := make(chan struct{})
			for _, job := range jobs {
				wg.Go(func() {
					defer GinkgoRecover()
					<-start
					job.Spec.Suspend = ptr.To(false)
					err := env.Client.Update(ctx, job)
					if err != nil {
						Expect(err.Error()).To(ContainSubstring("[aggregate-quota]"), "a resume failed for another reason")
						return
					}
					mu.Lock()
					defer mu.Unlock()
					resumed = append(resumed, job.Name)
				})
			}
			close(start)
			wg.Wait()
			Expect(resumed).To(HaveLen(1), "round %d: resumed %v", round, resumed)
			Expect(env.ReservedJobs(ctx, ns)).To(Equal(resumed), "round %d: the resumed job holds the quota", round)
		}
	})

	It("record the admitted job, keep what a partly created job's missing pods need, and release it once every pod exists", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("partial-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		job := admitted(ctx, fixtures.TrainJob(ns, "first", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())

		res := env.Reservation(ctx, ns)
		Expect(res).NotTo(BeNil(), "no QuotaReservation after an admitted create")
		Expect(res.Spec.Namespace).To(Equal(ns))
		Expect(res.Spec.Entries).To(HaveLen(1))
		e := res.Spec.Entries[0]
		Expect(e.TrainJob).To(Equal("first"))
		Expect(e.UID).To(Equal(job.UID), "the entry names the job's UID, so a later job of the same name is not mistaken for it")
		Expect(e.Operation).To(Equal(quotav1alpha1.OperationCreate))
		Expect(e.Parts).To(ContainElement(HaveField("ReplicatedJob", "node")))

		// The JobSet controller's first pods: the launcher and one of two
		// Workers. The test plays the quota controller too and charges the
		// Worker's 4 GPUs itself: the pods ask for none, so the apiserver's
		// own quota admission (whose informer may not know the quota yet)
		// cannot charge them as well.
		createPod(ctx, ns, "first", "launcher", nil)
		createPod(ctx, ns, "first", "node", nil)
		setUsed(ctx, ns, "team-a", fixtures.ResourceList("requests.nvidia.com/gpu", "4"))
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(env.Manager.GetClient().List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
		}).Should(Succeed())
		// 16 - 4 used by the Worker that exists - 4 its missing Worker still needs.
		msg := denial(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(3).NumProcPerNode(4).Obj())
		Expect(msg).To(ContainSubstring("has 8 of 16 free"))
		Expect(env.ReservedJobs(ctx, ns)).To(Equal([]string{"first"}), "a partly created job keeps its entry")

		createPod(ctx, ns, "first", "node", nil)
		setUsed(ctx, ns, "team-a", fixtures.ResourceList("requests.nvidia.com/gpu", "8"))
		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).Should(BeEmpty(), "every pod exists: the quota counts them, the entry goes")
		admitted(ctx, fixtures.TrainJob(ns, "second", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
	})

	It("release what an admitted job holds when its create then fails, after the grace", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("failed-create-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		// The apiserver's own quota admission runs after the webhooks: this quota
		// refuses the TrainJob object itself once mpiguard has admitted it.
		createQuota(ctx, fixtures.ResourceQuota(ns, "no-trainjobs", "count/trainjobs.trainer.kubeflow.org", "0"), fixtures.ResourceList("count/trainjobs.trainer.kubeflow.org", "0"))
		err := env.Client.Create(ctx, fixtures.TrainJob(ns, "refused", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("no-trainjobs"), "refused by the apiserver's quota, after mpiguard admitted it")
		Expect(env.ReservedJobs(ctx, ns)).To(Equal([]string{"refused"}), "mpiguard wrote its reservation before answering")

		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }).WithTimeout(reservationGrace+20e9).Should(BeEmpty(),
			"the reservation of a TrainJob that never appeared is released after the grace")
		Expect(env.Client.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-trainjobs"}})).To(Succeed())
		Eventually(func() error {
			return env.Client.Create(ctx, fixtures.TrainJob(ns, "fits", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		}).Should(Succeed(), "the quota is whole again")
	})

	It("are exact beyond int64: thousands of Workers x Ti and Pi per Worker get the right verdict and numbers", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		memory := func(name, perWorker string) *fixtures.RuntimeBuilder {
			return fixtures.MPIRuntime(name).
				Resources("node", fixtures.ResourceList("cpu", "4", "memory", perWorker), nil).
				Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "1Gi"), nil)
		}
		tib := createRuntime(ctx, memory("tib-workers-"+ns, "4Ti"))
		pib := createRuntime(ctx, memory("pib-workers-"+ns, "8Pi"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.memory", "1Pi"), fixtures.ResourceList("requests.memory", "0"))

		// 5000 x 4Ti + 1Gi: about 2.2e19 milli-bytes, past int64.
		msg := denial(ctx, fixtures.TrainJob(ns, "many", tib.Name).NumNodes(5000).NumProcPerNode(1).Obj())
		Expect(msg).To(ContainSubstring("TrainJob needs 20480001Gi memory (launcher 1Gi + 5000 workers x 4Ti)"))
		Expect(msg).To(ContainSubstring(`has 1Pi of 1Pi free`))
		Expect(msg).To(ContainSubstring("reduce workers to 255"))

		msg = denial(ctx, fixtures.TrainJob(ns, "huge", pib.Name).NumNodes(2).NumProcPerNode(1).Obj())
		Expect(msg).To(ContainSubstring("TrainJob needs 16777217Gi memory (launcher 1Gi + 2 workers x 8Pi)"))
		Expect(msg).To(ContainSubstring("reduce memory per worker to 536870400Mi"))

		// 255 x 4Ti + 1Gi fits in 1Pi.
		admitted(ctx, fixtures.TrainJob(ns, "fits", tib.Name).NumNodes(255).NumProcPerNode(1).Obj())
	})

	It("refuse to decide on an entry edited by hand into one that gives quota back, naming the field, until it is mended", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("hand-edit-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "16"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		admitted(ctx, fixtures.TrainJob(ns, "first", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())

		// The CRD's schema lets a shape index point past spec.podShapes (it
		// checks only its sign); read as written, the Workers would charge
		// nothing and give the first job's 8 GPUs back.
		workers, stored := -1, int32(0)
		setWorkerShape := func(shape int32) {
			GinkgoHelper()
			res := env.Reservation(ctx, ns)
			for i, p := range res.Spec.Entries[0].Parts {
				if p.ReplicatedJob == "node" {
					Expect(p.Shape).NotTo(BeNil(), "the Workers' part refers to a pod shape")
					workers, stored = i, *p.Shape
					res.Spec.Entries[0].Parts[i].Shape = ptr.To(shape)
				}
			}
			Expect(env.Client.Update(ctx, res)).To(Succeed())
		}
		setWorkerShape(99)
		original := stored
		second := func() *trainer.TrainJob {
			return fixtures.TrainJob(ns, "second", rt.Name).NumNodes(4).NumProcPerNode(4).Obj() // 16 GPUs: fits only if the first's 8 are given back
		}
		field := fmt.Sprintf("spec.entries[0].parts[%d].shape", workers)
		Eventually(func() error { return env.Client.Create(ctx, second(), client.DryRunAll) }).
			Should(MatchError(And(ContainSubstring(field), ContainSubstring("edited by hand"), ContainSubstring("kubectl edit quotareservation"))),
				"a create decided on the hand-broken entry")
		Eventually(func() []string { return reservationEvents(ctx, ns, store.ReasonInvalidEntries) }).
			Should(ContainElement(ContainSubstring(field)), "no Warning Event on the QuotaReservation saying which field")

		setWorkerShape(original)
		Eventually(func() error { return env.Client.Create(ctx, second(), client.DryRunAll) }).
			Should(MatchError(ContainSubstring("[aggregate-quota]")), "once mended, the first job's 8 GPUs count again")
	})

	It("refuse to decide on an entry edited by hand into a value of the wrong type, only in its namespace, until it is mended", func(ctx context.Context) {
		broken, other := env.Namespace(ctx, nil), env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("wrong-type-"+broken, "4"))
		for _, ns := range []string{broken, other} {
			createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "64"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		}
		admitted(ctx, fixtures.TrainJob(broken, "first", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		// spec.entries has no schema in the CRD, so the apiserver stores a
		// string where mpiguard wrote a pod count.
		setPods := func(pods any) {
			GinkgoHelper()
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(quotav1alpha1.GroupVersion.WithKind("QuotaReservation"))
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: broken}, u)).To(Succeed())
			entries, _, err := unstructured.NestedSlice(u.Object, "spec", "entries")
			Expect(err).NotTo(HaveOccurred())
			entries[0].(map[string]any)["parts"].([]any)[0].(map[string]any)["pods"] = pods
			Expect(unstructured.SetNestedSlice(u.Object, entries, "spec", "entries")).To(Succeed())
			Expect(env.Client.Update(ctx, u)).To(Succeed())
		}
		setPods("two")
		second := func(ns string) *trainer.TrainJob {
			return fixtures.TrainJob(ns, "second", rt.Name).NumNodes(2).NumProcPerNode(4).Obj()
		}

		// Refused in its namespace, naming the entry, dry run (decided on
		// the cache's copy) and real create (whose write reads live) alike.
		refusal := And(ContainSubstring("spec.entries[0]"), ContainSubstring("parts.pods"), ContainSubstring("kubectl edit quotareservation"))
		Eventually(func() error { return env.Client.Create(ctx, second(broken), client.DryRunAll) }).
			Should(MatchError(refusal), "a dry run decided on an object mpiguard cannot read")
		Expect(env.Client.Create(ctx, second(broken))).To(MatchError(refusal), "a create decided on an object mpiguard cannot read")
		Eventually(func() []string { return reservationEvents(ctx, broken, store.ReasonInvalidEntries) }).
			Should(ContainElement(ContainSubstring("spec.entries[0]")), "no Warning Event on the QuotaReservation saying which entry")

		// Elsewhere nothing changes: creates are decided, and the leader's
		// informer of QuotaReservations still works, so an object created
		// now is seen and its entries released once their pods exist. (One
		// object that did not decode used to stop that informer in every
		// namespace: admission stayed exact, reading live after a conflict,
		// but the leader saw no new object, and released nothing in it.)
		admitted(ctx, fixtures.TrainJob(other, "first", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
		admitted(ctx, second(other))
		createPod(ctx, other, "first", "launcher", nil)
		createPod(ctx, other, "first", "node", nil)
		createPod(ctx, other, "first", "node", nil)
		Eventually(func() []string { return env.ReservedJobs(ctx, other) }).Should(Equal([]string{"second"}),
			"the first job's pods exist in a namespace whose object was created next to the broken one: its entry goes")

		setPods(int64(2))
		Eventually(func() error { return env.Client.Create(ctx, second(broken)) }).Should(Succeed(), "once mended, creates are decided again")
	})

	It("decide a dry run without reserving anything", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := createRuntime(ctx, gpuWorkers("dry-run-"+ns, "4"))
		createQuota(ctx, fixtures.ResourceQuota(ns, "team-a", "requests.nvidia.com/gpu", "8"), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		Expect(env.Client.Create(ctx, fixtures.TrainJob(ns, "dry", rt.Name).NumNodes(2).NumProcPerNode(4).Obj(), client.DryRunAll)).To(Succeed())
		Expect(env.Reservation(ctx, ns)).To(BeNil())
		admitted(ctx, fixtures.TrainJob(ns, "real", rt.Name).NumNodes(2).NumProcPerNode(4).Obj())
	})
})

// reservationEvents returns the messages of the Events of reason on governed
// namespace ns's QuotaReservation.
func reservationEvents(ctx context.Context, ns, reason string) []string {
	GinkgoHelper()
	var events corev1.EventList
	Expect(env.Client.List(ctx, &events, client.InNamespace(env.PolicyNamespace))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == ns && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// setUsed sets a ResourceQuota's status.used, as the quota controller would.
func setUsed(ctx context.Context, ns, name string, used corev1.ResourceList) {
	GinkgoHelper()
	var q corev1.ResourceQuota
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &q)).To(Succeed())
	q.Status.Used = used
	Expect(env.Client.Status().Update(ctx, &q)).To(Succeed())
}

// createPod creates a pod of TrainJob job's replicated job as the JobSet
// controller would label it, requesting requests (nil: none).
func createPod(ctx context.Context, ns, job, replicatedJob string, requests corev1.ResourceList) {
	GinkgoHelper()
	js := jobSetOf(ctx, ns, job)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: job + "-" + replicatedJob + "-",
			Labels: map[string]string{
				jobsetv1alpha2.JobSetNameKey: job, jobsetv1alpha2.JobSetUIDKey: string(js.UID),
				jobsetv1alpha2.ReplicatedJobNameKey: replicatedJob,
			}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: requests, Limits: requests}}}},
	}
	Expect(env.Client.Create(ctx, pod)).To(Succeed())
}

// jobSetOf returns the JobSet of TrainJob job, created as the Trainer would
// create it (named after the job, controlled by it) when it has none yet: a
// pod belongs to the TrainJob whose JobSet's UID its jobset-uid label names.
// This suite runs no Trainer; the JobSet is never run.
func jobSetOf(ctx context.Context, ns, job string) *jobsetv1alpha2.JobSet {
	GinkgoHelper()
	js := &jobsetv1alpha2.JobSet{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, js); err == nil {
		return js
	}
	tj := &trainer.TrainJob{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: job}, tj)).To(Succeed())
	js = &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind, Name: job, UID: tj.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}}},
		Spec: jobsetv1alpha2.JobSetSpec{Suspend: ptr.To(true), ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "node", Replicas: 1,
			Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			}}}},
		}}},
	}
	Expect(env.Client.Create(ctx, js)).To(Succeed())
	return js
}
