package objects

import (
	"context"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// objectQuota is what every spec's namespace allows: 3 Jobs (one 2-Job job
// fits, two do not), and room for everything else two jobs create.
var objectQuota = []string{
	"count/jobs.batch", "3", "count/configmaps", "10", "count/secrets", "10",
	"count/services", "10", "count/jobsets.jobset.x-k8s.io", "10",
}

// runtime is an MPI runtime of a Launcher and a Worker replicated job: 2
// Jobs per TrainJob. It sets what JobSet's webhook (not running in
// envtest) would default: DNS hostnames, hence the headless Service.
func runtime(ctx context.Context) string {
	GinkgoHelper()
	name := fmt.Sprintf("objects-%d", GinkgoRandomSeed()+int64(GinkgoParallelProcess())+int64(CurrentSpecReport().LeafNodeLocation.LineNumber))
	b := fixtures.MPIRuntime(name)
	rt := b.Cluster()
	rt.Spec.Template.Spec.Network = &jobset.Network{EnableDNSHostnames: ptr.To(true)}
	env.CreateClusterRuntime(ctx, rt)
	return name
}

// syncedQuota creates the quota and waits until kube-controller-manager's
// quota controller has counted what exists, and mpiguard's cache shows it.
func syncedQuota(ctx context.Context, ns string) {
	GinkgoHelper()
	q := fixtures.ResourceQuota(ns, "objects", objectQuota...)
	Expect(env.Client.Create(ctx, q)).To(Succeed())
	Eventually(func(g Gomega) {
		var cached corev1.ResourceQuota
		g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(q), &cached)).To(Succeed())
		g.Expect(cached.Status.Used).To(HaveLen(len(q.Spec.Hard)))
	}, timeout, interval).Should(Succeed(), "the quota controller never synced quota %s/%s", ns, q.Name)
}

// used is the quota's status.used of name.
func used(ctx context.Context, ns, name string) int64 {
	GinkgoHelper()
	var q corev1.ResourceQuota
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "objects"}, &q)).To(Succeed())
	n := q.Status.Used[corev1.ResourceName(name)]
	return n.Value()
}

// denial creates job and returns mpiguard's denial.
func denial(ctx context.Context, job *trainer.TrainJob) string {
	GinkgoHelper()
	err := env.Client.Create(ctx, job)
	Expect(err).To(HaveOccurred(), "TrainJob %s/%s was admitted, want a denial", job.Namespace, job.Name)
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want a webhook denial, got %v", err)
	return err.Error()
}

// allCreated waits until every object the Trainer and JobSet create for job
// exists, and no creator was refused.
func allCreated(ctx context.Context, job *trainer.TrainJob) {
	GinkgoHelper()
	ns, name := job.Namespace, job.Name
	objects := []client.Object{
		&jobset.JobSet{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name + "-launcher-0"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name + "-node-0"}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-mpi-ssh-auth"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-mpi-hostfile"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name + "-runtime-snapshot"}},
	}
	for _, obj := range objects {
		Eventually(func() error {
			return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: obj.GetName()}, obj)
		}, timeout, interval).Should(Succeed(), "%T %s/%s of TrainJob %s was never created", obj, ns, obj.GetName(), name)
	}
	Expect(refusals(ctx, ns)).To(BeEmpty(), "a creator was refused in %s", ns)
}

// refusals are the Warning events of namespace ns that say a creator could
// not create an object (JobSet's JobCreationFailed, a quota's "exceeded").
func refusals(ctx context.Context, ns string) []string {
	GinkgoHelper()
	var events corev1.EventList
	Expect(env.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && (e.Reason == "JobCreationFailed" || e.Reason == "HeadlessServiceCreationFailed") {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

var _ = Describe("Object-count quotas", func() {
	It("creates every object of an admitted job and refuses, at submit, the next job that would not fit", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := runtime(ctx)
		syncedQuota(ctx, ns)

		first := fixtures.TrainJob(ns, "first", rt).NumNodes(1).Obj()
		Expect(env.Client.Create(ctx, first)).To(Succeed())
		// JobSet's controller starts after the second job's decision: the
		// first job's Jobs do not exist yet, only its reservation holds them.
		msg := denial(ctx, fixtures.TrainJob(ns, "second", rt).NumNodes(1).Obj())
		Expect(msg).To(ContainSubstring(`[object-quota] spec.runtimeRef: TrainJob creates 2 Jobs counted by count/jobs.batch`))
		Expect(msg).To(ContainSubstring(`has 1 of 3 free (0 exist, 2 held by TrainJobs admitted whose objects do not exist yet: ` + ns + `/first 2)`))

		env.JobSetController(ctx, ns)
		allCreated(ctx, first)
		Eventually(func() int64 { return used(ctx, ns, "count/jobs.batch") }, timeout, interval).Should(BeEquivalentTo(2))

		// Once its pods exist, the first job's entry goes: status.used
		// counts its Jobs, and a third job is still refused.
		Eventually(func() []string { return env.ReservedJobs(ctx, ns) }, timeout, interval).Should(BeEmpty())
		msg = denial(ctx, fixtures.TrainJob(ns, "third", rt).NumNodes(1).Obj())
		Expect(msg).To(ContainSubstring(`TrainJob creates 2 Jobs counted by count/jobs.batch`))
		Expect(msg).To(ContainSubstring(`has 1 of 3 free; ask an admin to raise count/jobs.batch in ResourceQuota "objects" to at least 4`))
		Expect(refusals(ctx, ns)).To(BeEmpty())
	})

	It("does not charge a resumed job again for the objects it made while suspended", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := runtime(ctx)
		syncedQuota(ctx, ns)
		env.JobSetController(ctx, ns)

		// Kueue's way: created suspended, the Trainer and JobSet still
		// create the objects (the Jobs suspended), and the quota counts them.
		job := fixtures.TrainJob(ns, "queued", rt).NumNodes(1).Suspend(true).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		allCreated(ctx, job)
		Eventually(func() int64 { return used(ctx, ns, "count/jobs.batch") }, timeout, interval).Should(BeEquivalentTo(2))

		// Its resume creates no Job: 2 of 3 used, and it is allowed.
		Expect(env.Client.Patch(ctx, job.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":false}}`)))).To(Succeed())
		Expect(refusals(ctx, ns)).To(BeEmpty())
	})

	It("does not charge a job for an SSH Secret that exists already", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		rt := runtime(ctx)
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kept-mpi-ssh-auth"},
			Type:       corev1.SecretTypeSSHAuth,
			Data:       map[string][]byte{corev1.SSHAuthPrivateKey: []byte("kept")},
		}
		Expect(env.Client.Create(ctx, secret)).To(Succeed())
		q := fixtures.ResourceQuota(ns, "objects", "count/secrets", "1")
		Expect(env.Client.Create(ctx, q)).To(Succeed())
		Eventually(func(g Gomega) {
			var cached corev1.ResourceQuota
			g.Expect(env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(q), &cached)).To(Succeed())
			g.Expect(cached.Status.Used).To(HaveKeyWithValue(corev1.ResourceName("count/secrets"), resource.MustParse("1")))
		}, timeout, interval).Should(Succeed())
		env.JobSetController(ctx, ns)

		job := fixtures.TrainJob(ns, "kept", rt).NumNodes(1).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed(), "the Trainer keeps the Secret: the job creates none")
		allCreated(ctx, job)
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
		Expect(secret.Data[corev1.SSHAuthPrivateKey]).To(BeEquivalentTo("kept"), "the Trainer replaced the Secret")
	})
})
