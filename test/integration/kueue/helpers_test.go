package kueue

import (
	"context"
	"fmt"
	"slices"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/kueuecheck"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// The cluster's Kueue setup: an AdmissionCheck answered by mpiguard, and
// two ClusterQueues that require it, one per region. Their quota is ample:
// what a job may use is the namespace's ResourceQuota, which only mpiguard
// knows how to charge for an MPI job (Launcher and Workers as they render).
const (
	checkName = "mpiguard"
	regionKey = "topology.kubernetes.io/region"
	euQueue   = "cq-eu"
	usQueue   = "cq-us"
	// plainQueue offers eu-west-1 without mpiguard's check: what a cluster
	// that never wired it gets (only the webhooks judge Kueue's resume).
	plainQueue = "cq-plain"
	// waitingQueue offers eu-west-1 behind mpiguard's check and
	// otherCheck, which nobody answers unless a spec does (setOtherCheck):
	// Kueue waits for it after mpiguard's is Ready.
	waitingQueue = "cq-waiting"
	otherCheck   = "other"
	runtime      = "kueue-gpu-workers"
	queueLabel   = "kueue.x-k8s.io/queue-name"
	// euZone is the namespace label of the data-residency policy's "eu"
	// zone (eu-west-1, eu-central-1).
	zoneLabel = "mpiguard.io/data-residency"
)

func createKueueSetup(ctx context.Context) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, &kueue.AdmissionCheck{
		ObjectMeta: metav1.ObjectMeta{Name: checkName},
		Spec:       kueue.AdmissionCheckSpec{ControllerName: kueuecheck.ControllerName},
	})).To(Succeed())
	for queue, region := range map[string]string{euQueue: "eu-west-1", usQueue: "us-east-1"} {
		Expect(env.Client.Create(ctx, clusterQueue(queue, regionFlavor(ctx, queue, region)))).To(Succeed())
	}
	plain := clusterQueue(plainQueue, regionFlavor(ctx, plainQueue, "eu-west-1"))
	plain.Spec.AdmissionChecksStrategy = nil
	Expect(env.Client.Create(ctx, plain)).To(Succeed())
	createOtherCheck(ctx)
	waiting := clusterQueue(waitingQueue, regionFlavor(ctx, waitingQueue, "eu-west-1"))
	waiting.Spec.AdmissionChecksStrategy.AdmissionChecks = append(waiting.Spec.AdmissionChecksStrategy.AdmissionChecks, kueue.AdmissionCheckStrategyRule{Name: otherCheck})
	Expect(env.Client.Create(ctx, waiting)).To(Succeed())
	// Kueue admits through a ClusterQueue only while every check it names
	// is Active: mpiguard says so for its own.
	for _, queue := range []string{euQueue, usQueue, plainQueue, waitingQueue} {
		Eventually(func(g Gomega) {
			cq := &kueue.ClusterQueue{}
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: queue}, cq)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cq.Status.Conditions, kueue.ClusterQueueActive)).To(BeTrue(), "ClusterQueue %s: %v", queue, cq.Status.Conditions)
		}).Should(Succeed())
	}
	env.CreateClusterRuntime(ctx, fixtures.GPUWorkersRuntime(runtime, "4").Cluster())
}

// regionFlavor creates the ResourceFlavor of queue's nodes in region, and
// returns its name.
func regionFlavor(ctx context.Context, queue, region string) string {
	GinkgoHelper()
	name := queue + "-" + region
	Expect(env.Client.Create(ctx, &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       kueue.ResourceFlavorSpec{NodeLabels: map[string]string{regionKey: region}},
	})).To(Succeed())
	return name
}

// otherController plays the controller of otherCheck: another check a
// ClusterQueue may require next to mpiguard's (a provisioning request, say).
const otherController = "example.com/other"

// createOtherCheck creates otherCheck, Active as its controller would mark it.
func createOtherCheck(ctx context.Context) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, &kueue.AdmissionCheck{
		ObjectMeta: metav1.ObjectMeta{Name: otherCheck},
		Spec:       kueue.AdmissionCheckSpec{ControllerName: otherController},
	})).To(Succeed())
	ac := &kueue.AdmissionCheck{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: otherCheck}, ac)).To(Succeed())
	meta.SetStatusCondition(&ac.Status.Conditions, metav1.Condition{Type: kueue.AdmissionCheckActive, Status: metav1.ConditionTrue, Reason: "Active", Message: "the spec answers it"})
	Expect(env.Client.Status().Update(ctx, ac)).To(Succeed())
}

// setOtherCheck sets otherCheck's state on wl, as its controller would
// (server-side apply of its own entry of status.admissionChecks).
func setOtherCheck(ctx context.Context, wl *kueue.Workload, state kueue.CheckState) {
	GinkgoHelper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kueue.GroupVersion.String(),
		"kind":       "Workload",
		"metadata":   map[string]any{"name": wl.Name, "namespace": wl.Namespace},
		"status": map[string]any{"admissionChecks": []any{map[string]any{
			"name": otherCheck, "state": string(state), "message": "answered by the spec",
			"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
		}}},
	}}
	Expect(env.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(otherController), client.ForceOwnership)).To(Succeed())
}

// held says whether the namespace's QuotaReservation has an entry of job.
func held(ctx context.Context, g Gomega, job *trainer.TrainJob) bool {
	res := &quotav1alpha1.QuotaReservation{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: job.Namespace}, res)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return slices.ContainsFunc(res.Spec.Entries, func(e quotav1alpha1.ReservationEntry) bool { return e.TrainJob == job.Name })
}

// clusterQueue requires mpiguard's check and offers 64 CPUs, 256Gi and 64
// GPUs of one flavor to every namespace.
func clusterQueue(name, flavor string) *kueue.ClusterQueue {
	quota := func(res, q string) kueue.ResourceQuota {
		return kueue.ResourceQuota{Name: corev1.ResourceName(res), NominalQuota: resource.MustParse(q)}
	}
	return &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueue.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"},
				Flavors: []kueue.FlavorQuotas{{
					Name:      kueue.ResourceFlavorReference(flavor),
					Resources: []kueue.ResourceQuota{quota("cpu", "64"), quota("memory", "256Gi"), quota("nvidia.com/gpu", "64")},
				}},
			}},
			AdmissionChecksStrategy: &kueue.AdmissionChecksStrategy{AdmissionChecks: []kueue.AdmissionCheckStrategyRule{{Name: checkName}}},
		},
	}
}

// queuedNamespace is a fresh namespace in data residency zone "eu" with a
// LocalQueue to ClusterQueue queue and, unless gpus is "", a ResourceQuota
// of gpus GPUs of which used are in use.
func queuedNamespace(ctx context.Context, queue, gpus, used string) string {
	GinkgoHelper()
	ns := env.Namespace(ctx, map[string]string{zoneLabel: "eu"})
	Expect(env.Client.Create(ctx, &kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "queue"},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(queue)},
	})).To(Succeed())
	if gpus != "" {
		env.CreateQuota(ctx, fixtures.ResourceQuota(ns, "gpus", "requests.nvidia.com/gpu", gpus), fixtures.ResourceList("requests.nvidia.com/gpu", used))
	}
	return ns
}

// submit creates an 8-GPU MPI TrainJob (1 Launcher + 2 Workers x 4 GPUs)
// queued to the namespace's LocalQueue, as a user does: not suspended.
// Kueue's mutating webhook suspends it and adds its runtime patch, and
// mpiguard's adds its own; the stored job has both.
func submit(ctx context.Context, ns, name string) *trainer.TrainJob {
	GinkgoHelper()
	job := fixtures.TrainJob(ns, name, runtime).NumNodes(2).NumProcPerNode(4).Label(queueLabel, "queue").Obj()
	Expect(env.Client.Create(ctx, job)).To(Succeed())
	stored := get(ctx, job)
	Expect(ptr.Deref(stored.Spec.Suspend, false)).To(BeTrue(), "Kueue's webhook suspends a queued job")
	var managers []string
	for _, p := range stored.Spec.RuntimePatches {
		managers = append(managers, p.Manager)
	}
	Expect(managers).To(ContainElements(kueuecheck.KueueManager, engine.AdmissionManager), "both webhooks' runtime patches on create")
	return job
}

// get reads the stored TrainJob.
func get(ctx context.Context, job *trainer.TrainJob) *trainer.TrainJob {
	GinkgoHelper()
	stored := &trainer.TrainJob{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), stored)).To(Succeed())
	return stored
}

func running(ctx context.Context, job *trainer.TrainJob) bool {
	return !ptr.Deref(get(ctx, job).Spec.Suspend, true)
}

// workloadOf is the Workload Kueue made for job, once it exists.
func workloadOf(ctx context.Context, g Gomega, job *trainer.TrainJob) *kueue.Workload {
	var list kueue.WorkloadList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(job.Namespace))).To(Succeed())
	var found *kueue.Workload
	for i := range list.Items {
		if owner := metav1.GetControllerOf(&list.Items[i]); owner != nil && owner.UID == job.UID {
			found = &list.Items[i]
		}
	}
	g.Expect(found).NotTo(BeNil(), "no Workload of TrainJob %s yet", job.Name)
	return found
}

// check is the state of mpiguard's check on wl, once Kueue has added it.
func check(g Gomega, wl *kueue.Workload) kueue.AdmissionCheckState {
	i := slices.IndexFunc(wl.Status.AdmissionChecks, func(s kueue.AdmissionCheckState) bool { return s.Name == checkName })
	g.Expect(i).NotTo(BeNumerically("<", 0), "Workload %s has no check %s yet", wl.Name, checkName)
	return wl.Status.AdmissionChecks[i]
}

// warnings are the Warning events mpiguard's check recorded on job with reason.
func warnings(ctx context.Context, g Gomega, job *trainer.TrainJob, reason string) []string {
	var list eventsv1.EventList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(job.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.UID == job.UID && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			out = append(out, e.Note)
		}
	}
	return out
}

// kueueEvents are the messages of the events Kueue recorded on wl with reason.
func kueueEvents(ctx context.Context, g Gomega, wl *kueue.Workload, reason string) []string {
	var list corev1.EventList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(wl.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID == wl.UID && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// clusterQueueUsage is the GPUs ClusterQueue queue has reserved, and how many
// Workloads hold a reservation in it.
func clusterQueueUsage(ctx context.Context, g Gomega, queue string) (gpus string, reserving int32) {
	cq := &kueue.ClusterQueue{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: queue}, cq)).To(Succeed())
	total := resource.Quantity{}
	for _, f := range cq.Status.FlavorsReservation {
		for _, r := range f.Resources {
			if r.Name == "nvidia.com/gpu" {
				total.Add(r.Total)
			}
		}
	}
	return total.String(), cq.Status.ReservingWorkloads
}

func describe(wl *kueue.Workload) string {
	return fmt.Sprintf("Workload %s: checks %+v, conditions %+v", wl.Name, wl.Status.AdmissionChecks, wl.Status.Conditions)
}
