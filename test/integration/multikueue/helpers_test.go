package multikueue

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/kueuecheck"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// The Kueue setup of both clusters: one ClusterQueue each, named alike,
// with ample quota of one eu-west-1 flavor (what a job may use is the
// namespace's ResourceQuota where it runs, which mpiguard charges). The
// manager's ClusterQueue requires the MultiKueue check, which dispatches to
// the one worker; the worker's requires mpiguard's.
const (
	queue         = "cq"
	flavor        = "eu-west-1"
	regionKey     = "topology.kubernetes.io/region"
	multiKueue    = "multikueue"
	mpiguardCheck = "mpiguard"
	workerName    = "worker"
	// workerSecret holds the worker's kubeconfig, in the manager's Kueue
	// namespace (where MultiKueue reads it).
	workerSecret = "worker-kubeconfig"
	runtime      = "mk-gpu-workers"
	queueLabel   = "kueue.x-k8s.io/queue-name"
	zoneLabel    = "mpiguard.io/data-residency"
)

// createWorkerSetup makes the worker's ClusterQueue, behind mpiguard's
// check, and the runtime the jobs use.
func createWorkerSetup(ctx context.Context) {
	GinkgoHelper()
	c := worker.Client
	Expect(c.Create(ctx, &kueue.AdmissionCheck{
		ObjectMeta: metav1.ObjectMeta{Name: mpiguardCheck},
		Spec:       kueue.AdmissionCheckSpec{ControllerName: kueuecheck.ControllerName},
	})).To(Succeed())
	createFlavorAndQueue(ctx, c, mpiguardCheck)
	worker.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime(runtime, "4").Cluster())
}

// createManagerSetup makes the manager's ClusterQueue behind the MultiKueue
// check, whose MultiKueueConfig names the worker through a kubeconfig
// Secret of the worker's apiserver (envtest's admin: client certificate and
// CA inline, as MultiKueue requires), and the same runtime: mpiguard renders
// the job with it to judge it.
func createManagerSetup(ctx context.Context) {
	GinkgoHelper()
	c := manager.Client
	Expect(c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: managerKq.Namespace, Name: workerSecret},
		Data:       map[string][]byte{kueue.MultiKueueConfigSecretKey: worker.Testenv.KubeConfig},
	})).To(Succeed())
	Expect(c.Create(ctx, &kueue.MultiKueueCluster{
		ObjectMeta: metav1.ObjectMeta{Name: workerName},
		Spec: kueue.MultiKueueClusterSpec{ClusterSource: kueue.ClusterSource{KubeConfig: &kueue.KubeConfig{
			Location: workerSecret, LocationType: kueue.SecretLocationType,
		}}},
	})).To(Succeed())
	Expect(c.Create(ctx, &kueue.MultiKueueConfig{
		ObjectMeta: metav1.ObjectMeta{Name: multiKueue},
		Spec:       kueue.MultiKueueConfigSpec{Clusters: []string{workerName}},
	})).To(Succeed())
	Expect(c.Create(ctx, &kueue.AdmissionCheck{
		ObjectMeta: metav1.ObjectMeta{Name: multiKueue},
		Spec: kueue.AdmissionCheckSpec{
			ControllerName: kueue.MultiKueueControllerName,
			Parameters:     &kueue.AdmissionCheckParametersReference{APIGroup: kueue.GroupVersion.Group, Kind: "MultiKueueConfig", Name: multiKueue},
		},
	})).To(Succeed())
	Eventually(func(g Gomega) {
		cl := &kueue.MultiKueueCluster{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: workerName}, cl)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cl.Status.Conditions, kueue.MultiKueueClusterActive)).To(BeTrue(), "MultiKueueCluster %s: %v", workerName, cl.Status.Conditions)
	}).Should(Succeed())
	createFlavorAndQueue(ctx, c, multiKueue)
	manager.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime(runtime, "4").Cluster())
}

// createFlavorAndQueue makes the eu-west-1 flavor and the ClusterQueue
// (64 CPUs, 256Gi, 64 GPUs for every namespace) behind check, and waits
// until Kueue marks it Active (every check it names is).
func createFlavorAndQueue(ctx context.Context, c client.Client, check string) {
	GinkgoHelper()
	Expect(c.Create(ctx, &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: flavor},
		Spec:       kueue.ResourceFlavorSpec{NodeLabels: map[string]string{regionKey: flavor}},
	})).To(Succeed())
	quota := func(res, q string) kueue.ResourceQuota {
		return kueue.ResourceQuota{Name: corev1.ResourceName(res), NominalQuota: resource.MustParse(q)}
	}
	Expect(c.Create(ctx, &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: queue},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"},
				Flavors: []kueue.FlavorQuotas{{
					Name:      flavor,
					Resources: []kueue.ResourceQuota{quota("cpu", "64"), quota("memory", "256Gi"), quota("nvidia.com/gpu", "64")},
				}},
			}},
			AdmissionChecksStrategy: &kueue.AdmissionChecksStrategy{AdmissionChecks: []kueue.AdmissionCheckStrategyRule{{Name: kueue.AdmissionCheckReference(check)}}},
		},
	})).To(Succeed())
	Eventually(func(g Gomega) {
		cq := &kueue.ClusterQueue{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: queue}, cq)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive)).To(BeTrue(), "ClusterQueue %s: %v", queue, cq.Status.Conditions)
	}).Should(Succeed())
}

// twinNamespaces makes a namespace of one name on both clusters (MultiKueue
// copies a job into the namespace of its name), each in data residency zone
// "eu", with a LocalQueue to the ClusterQueue and a ResourceQuota of
// managerGPUs and workerGPUs GPUs, none in use.
func twinNamespaces(ctx context.Context, managerGPUs, workerGPUs string) string {
	GinkgoHelper()
	labels := map[string]string{zoneLabel: "eu"}
	ns := manager.Namespace(ctx, labels)
	twin := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}
	Expect(worker.Client.Create(ctx, twin)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(worker.DeleteNamespace(ctx, twin)).To(Succeed()) })
	for _, side := range []struct {
		env  *framework.Env
		gpus string
	}{{manager, managerGPUs}, {worker, workerGPUs}} {
		Expect(side.env.Client.Create(ctx, &kueue.LocalQueue{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queue"},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: queue},
		})).To(Succeed())
		side.env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "gpus", "requests.nvidia.com/gpu", side.gpus), fixtures.ResourceList("requests.nvidia.com/gpu", "0"))
		// Kueue's webhook hands a job to MultiKueue only once its queue
		// cache has the LocalQueue (jobframework.ApplyDefaultForManagedBy).
		Eventually(func(g Gomega) {
			lq := &kueue.LocalQueue{}
			g.Expect(side.env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "queue"}, lq)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(lq.Status.Conditions, kueue.LocalQueueActive)).To(BeTrue(), "LocalQueue: %v", lq.Status.Conditions)
		}).Should(Succeed())
	}
	return ns
}

// job is an 8-GPU MPI TrainJob (1 Launcher + 2 Workers x 4 GPUs) queued to
// the namespace's LocalQueue, as a user submits it: not suspended, no
// spec.managedBy (Kueue's webhook on the manager sets both).
func job(ns, name string) *fixtures.TrainJobBuilder {
	return fixtures.TrainJob(ns, name, runtime).NumNodes(2).NumProcPerNode(4).Label(queueLabel, "queue")
}

// get reads the TrainJob of key on c; nil when there is none.
func get(ctx context.Context, g Gomega, c client.Client, key client.ObjectKey) *trainer.TrainJob {
	out := &trainer.TrainJob{}
	err := c.Get(ctx, key, out)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return out
}

// workloadsIn lists the Workloads of namespace ns on c.
func workloadsIn(ctx context.Context, g Gomega, c client.Client, ns string) []kueue.Workload {
	var list kueue.WorkloadList
	g.Expect(c.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}
