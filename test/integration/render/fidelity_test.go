package render

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// pair is one TrainJob/runtime pair of the corpus, built for a fresh namespace.
type pair struct {
	// runtime returns the ClusterTrainingRuntime (named name) or TrainingRuntime.
	runtime        func(ns, name string) client.Object
	trainJob       func(ns, runtimeName string) *trainer.TrainJob
	limitRanges    []*corev1.LimitRange
	runtimeClasses []*nodev1.RuntimeClass
	// priorityClasses are created for the case and deleted after it.
	priorityClasses []*schedulingv1.PriorityClass
	// serviceAccounts are created in the case's namespace.
	serviceAccounts []string
	// random: the case is generated, so whether its pods are refused is
	// not known beforehand (wantProblems is not checked; each refusal must
	// still be predicted).
	random bool
	// wantProblems says the rendered pods are invalid (the apiserver must reject them).
	wantProblems bool
}

const jobName = "job"

// upstream loads one of the pinned Trainer module's manifests/base/runtimes.
func upstream(file string) func(ns, name string) client.Object {
	return func(_, name string) client.Object {
		dir, err := framework.TrainerRuntimes()
		Expect(err).NotTo(HaveOccurred())
		data, err := os.ReadFile(filepath.Join(dir, file))
		Expect(err).NotTo(HaveOccurred())
		rt := &trainer.ClusterTrainingRuntime{}
		Expect(yaml.Unmarshal(data, rt)).To(Succeed())
		rt.Name = name
		return rt
	}
}

func clusterRuntime(build func(b *fixtures.RuntimeBuilder)) func(ns, name string) client.Object {
	return func(_, name string) client.Object {
		b := fixtures.MPIRuntime(name)
		if build != nil {
			build(b)
		}
		return b.Cluster()
	}
}

func job(build func(b *fixtures.TrainJobBuilder)) func(ns, runtimeName string) *trainer.TrainJob {
	return func(ns, runtimeName string) *trainer.TrainJob {
		b := fixtures.TrainJob(ns, jobName, runtimeName)
		build(b)
		return b.Obj()
	}
}

func nodeSelectorPatch(manager string, selector map[string]string, jobs ...string) trainer.RuntimePatch {
	var rjs []trainer.ReplicatedJobPatch
	for _, j := range jobs {
		rjs = append(rjs, trainer.ReplicatedJobPatch{Name: j, Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
			Template: &trainer.PodTemplatePatch{Spec: &trainer.PodSpecPatch{NodeSelector: selector}},
		}}})
	}
	return trainer.RuntimePatch{Manager: manager, TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{
		Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{ReplicatedJobs: rjs}},
	}}
}

// kv turns "name=quantity" strings into the fixtures' name/quantity pairs.
func kv(pairs ...string) []string {
	out := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		out = append(out, k, v)
	}
	return out
}

func rl(pairs ...string) corev1.ResourceList { return fixtures.ResourceList(kv(pairs...)...) }

// withRatio is lr with its Container item's maxLimitRequestRatio (a
// LimitRange has one item per type).
func withRatio(lr *corev1.LimitRange, ratio corev1.ResourceList) *corev1.LimitRange {
	lr.Spec.Limits[0].MaxLimitRequestRatio = ratio
	return lr
}

// withItem is lr with one more item.
func withItem(lr *corev1.LimitRange, item corev1.LimitRangeItem) *corev1.LimitRange {
	lr.Spec.Limits = append(lr.Spec.Limits, item)
	return lr
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

var _ = Describe("JobView fidelity to the Trainer controller", func() {
	DescribeTable("renders what the Trainer creates and what the apiserver charges", expectFidelity,

		Entry("upstream deepspeed-distributed: 3 nodes of 4 CPU / 2 GPU", pair{
			runtime:  upstream("deepspeed_distributed.yaml"),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(3).Limits(kv("cpu=4", "nvidia.com/gpu=2")...) }),
		}),
		Entry("upstream mlx-distributed: 2 nodes with requests and limits", pair{
			runtime: upstream("mlx_distributed.yaml"),
			trainJob: job(func(b *fixtures.TrainJobBuilder) {
				b.NumNodes(2).Requests(kv("cpu=2", "memory=4Gi")...).Limits(kv("cpu=2", "memory=4Gi")...)
			}),
		}),
		Entry("upstream deepspeed-distributed: TrainJob numProcPerNode 2 and 4 GPUs", pair{
			runtime:  upstream("deepspeed_distributed.yaml"),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).NumProcPerNode(2).Limits(kv("nvidia.com/gpu=4")...) }),
		}),
		Entry("OpenMPI numProcPerNode 8: 4 workers of 8 GPUs", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.SlotsPerWorker(8).Resources(constants.Node, rl("cpu=8", "memory=32Gi"), rl("cpu=8", "memory=32Gi", "nvidia.com/gpu=8"))
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(4) }),
		}),
		Entry("OpenMPI launcher as a node, numNodes 1", pair{
			runtime:  clusterRuntime(func(b *fixtures.RuntimeBuilder) { b.RunLauncherAsNode(true) }),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(1).Limits(kv("cpu=1", "memory=1Gi")...) }),
		}),
		Entry("OpenMPI launcher as a node, numNodes 3", pair{
			runtime:  clusterRuntime(func(b *fixtures.RuntimeBuilder) { b.RunLauncherAsNode(true) }),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(3).Limits(kv("cpu=1", "memory=1Gi")...) }),
		}),
		Entry("OpenMPI numNodes 0: no workers, empty hostfile", pair{
			runtime:  clusterRuntime(nil),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(0) }),
		}),
		Entry("resourcesPerNode merged key by key with the runtime's memory request", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Node, rl("memory=32Gi"), nil)
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Limits(kv("cpu=8", "nvidia.com/gpu=4")...) }),
		}),
		Entry("merged memory request above the TrainJob's memory limit: invalid pods", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Node, rl("memory=32Gi"), nil)
			}),
			trainJob:     job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Limits(kv("cpu=2", "memory=16Gi")...) }),
			wantProblems: true,
		}),
		Entry("resource name without vendor prefix (gpu instead of nvidia.com/gpu): invalid pods", pair{
			runtime:      clusterRuntime(nil),
			trainJob:     job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Limits(kv("cpu=1", "memory=1Gi", "gpu=1")...) }),
			wantProblems: true,
		}),
		Entry("limits only: requests default to limits", pair{
			runtime: clusterRuntime(nil),
			trainJob: job(func(b *fixtures.TrainJobBuilder) {
				b.NumNodes(3).Limits(kv("cpu=2", "memory=2Gi", "ephemeral-storage=1Gi")...)
			}),
		}),
		Entry("init container larger than the app container, plus a sidecar", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Node, rl("cpu=4", "memory=8Gi"), rl("cpu=4", "memory=8Gi"))
				b.PodSpec(constants.Node).InitContainers = []corev1.Container{
					{Name: "prep", Image: fixtures.DefaultImage, Resources: corev1.ResourceRequirements{
						Requests: rl("cpu=16", "memory=1Gi"), Limits: rl("cpu=16", "memory=1Gi")}},
					{Name: "proxy", Image: fixtures.DefaultImage, RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
						Resources: corev1.ResourceRequirements{Requests: rl("cpu=1", "memory=1Gi"), Limits: rl("cpu=1", "memory=1Gi")}},
				}
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
		}),
		Entry("pod-level resources", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Node, rl("cpu=2"), nil)
				b.PodSpec(constants.Node).Resources = &corev1.ResourceRequirements{Limits: rl("cpu=8", "memory=16Gi")}
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
		}),
		Entry("LimitRange defaults fill what containers do not declare", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Launcher, nil, rl("cpu=500m"))
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Requests(kv("cpu=1500m")...) }),
			limitRanges: []*corev1.LimitRange{
				fixtures.LimitRange("", "defaults", rl("cpu=2", "memory=4Gi"), rl("cpu=1", "memory=2Gi")),
				{ObjectMeta: metav1.ObjectMeta{Name: "only-default"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
					Type: corev1.LimitTypeContainer, Default: rl("ephemeral-storage=2Gi")}}}},
			},
		}),
		Entry("LimitRange default limit below the TrainJob's request: invalid pods", pair{
			runtime:  clusterRuntime(nil),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Requests(kv("cpu=3")...) }),
			limitRanges: []*corev1.LimitRange{
				fixtures.LimitRange("", "defaults", rl("cpu=2", "memory=4Gi"), rl("cpu=1", "memory=2Gi")),
			},
			wantProblems: true,
		}),
		Entry("LimitRange maxLimitRequestRatio: Worker limits 4 times their request, 2 allowed: invalid pods", pair{
			runtime:      clusterRuntime(nil),
			trainJob:     job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Requests(kv("cpu=1")...).Limits(kv("cpu=4")...) }),
			limitRanges:  []*corev1.LimitRange{withRatio(fixtures.LimitRange("", "ratio", rl("cpu=2", "memory=4Gi"), rl("cpu=1", "memory=2Gi")), rl("cpu=2"))},
			wantProblems: true,
		}),
		Entry("LimitRange maxLimitRequestRatio met by every container", pair{
			runtime:     clusterRuntime(nil),
			trainJob:    job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Requests(kv("cpu=1")...).Limits(kv("cpu=2")...) }),
			limitRanges: []*corev1.LimitRange{withRatio(fixtures.LimitRange("", "ratio", rl("cpu=2", "memory=4Gi"), rl("cpu=1", "memory=2Gi")), rl("cpu=2"))},
		}),
		Entry("LimitRange Pod item: a Worker pod's limits above the pod maximum: invalid pods", pair{
			runtime:  clusterRuntime(nil),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Requests(kv("cpu=2")...).Limits(kv("cpu=4")...) }),
			limitRanges: []*corev1.LimitRange{withItem(fixtures.LimitRange("", "pod-max", rl("cpu=1", "memory=4Gi"), rl("cpu=500m", "memory=2Gi")),
				corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu=3")})},
			wantProblems: true,
		}),
		Entry("LimitRange Pod item: a minimum of a resource no container requests: invalid pods", pair{
			runtime:  clusterRuntime(nil),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(1) }),
			limitRanges: []*corev1.LimitRange{withItem(fixtures.LimitRange("", "pod-min", rl("cpu=1", "memory=4Gi"), rl("cpu=500m", "memory=2Gi")),
				corev1.LimitRangeItem{Type: corev1.LimitTypePod, Min: rl("ephemeral-storage=1Gi")})},
			wantProblems: true,
		}),
		Entry("PriorityClass that does not exist: invalid pods", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.PodSpec("node").PriorityClassName = "no-such-class"
			}),
			trainJob:     job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
			wantProblems: true,
		}),
		Entry("globalDefault PriorityClass given to pods that name none", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.PodSpec("launcher").PriorityClassName = "fid-named"
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
			priorityClasses: []*schedulingv1.PriorityClass{
				{ObjectMeta: metav1.ObjectMeta{Name: "fid-default"}, Value: 100, GlobalDefault: true},
				{ObjectMeta: metav1.ObjectMeta{Name: "fid-named"}, Value: 1000},
			},
		}),
		Entry("ServiceAccount that exists", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.PodSpec(constants.Node).ServiceAccountName = "trainer"
			}),
			trainJob:        job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
			serviceAccounts: []string{"trainer"},
		}),
		Entry("ServiceAccount that does not exist: invalid pods", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.PodSpec(constants.Node).ServiceAccountName = "trainer"
			}),
			trainJob:        job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
			serviceAccounts: []string{"other"},
			wantProblems:    true,
		}),
		Entry("own not-ready toleration kept, the unreachable one added", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.PodSpec(constants.Node).Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(1) }),
		}),
		Entry("RuntimeClass overhead", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Node, rl("cpu=1", "memory=1Gi"), rl("cpu=1", "memory=1Gi"))
				b.PodSpec(constants.Node).RuntimeClassName = ptr.To("fidelity-kata")
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2) }),
			runtimeClasses: []*nodev1.RuntimeClass{{
				ObjectMeta: metav1.ObjectMeta{Name: "fidelity-kata"}, Handler: "kata",
				Overhead: &nodev1.Overhead{PodFixed: rl("cpu=250m", "memory=120Mi")},
			}},
		}),
		Entry("launcher replicas 2", pair{
			runtime: clusterRuntime(func(b *fixtures.RuntimeBuilder) {
				b.Resources(constants.Launcher, rl("cpu=1", "memory=1Gi"), rl("cpu=1", "memory=1Gi"))
				b.Replicas(constants.Launcher, 2)
			}),
			trainJob: job(func(b *fixtures.TrainJobBuilder) { b.NumNodes(2).Limits(kv("cpu=1", "memory=1Gi")...) }),
		}),
		Entry("GPU-derived slots: runtime says 1, nodes have 4 GPUs", pair{
			runtime: clusterRuntime(nil),
			trainJob: job(func(b *fixtures.TrainJobBuilder) {
				b.NumNodes(2).Limits(kv("cpu=4", "memory=8Gi", "nvidia.com/gpu=4")...)
			}),
		}),
		Entry("TrainingRuntime with runtime patches adding node selectors, applied in order", pair{
			runtime: func(ns, name string) client.Object { return fixtures.MPIRuntime(name).Namespaced(ns) },
			trainJob: job(func(b *fixtures.TrainJobBuilder) {
				b.NamespacedRuntime().NumNodes(2).Limits(kv("cpu=1", "memory=1Gi")...).
					RuntimePatch(nodeSelectorPatch("example.com/first", map[string]string{"topology.kubernetes.io/region": "eu-west-1"}, constants.Node, constants.Launcher)).
					RuntimePatch(nodeSelectorPatch("example.com/second", map[string]string{"topology.kubernetes.io/region": "eu-central-1", "pool": "a100"}, constants.Node))
			}),
		}),
	)
})

// expectFidelity creates p's objects in a new namespace, lets the Trainer
// build the JobSet, renders the job offline, and compares the JobView with
// the JobSet, with what the apiserver's admission chain makes of its pods
// (refused or not, PriorityClass, ServiceAccount, tolerations) and with what
// it charges them.
func expectFidelity(ctx context.Context, p pair) {
	ns := env.Namespace(ctx, nil)
	rtName := "fid-" + ns
	// A cluster's namespaces have their "default" ServiceAccount moments
	// after they are created (kube-controller-manager's serviceaccount
	// controller), before any job's pods.
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "default"}, &corev1.ServiceAccount{})
	}).Should(Succeed(), "the serviceaccount controller never created namespace %s's default ServiceAccount", ns)
	for _, name := range p.serviceAccounts {
		Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
	}

	By("creating the namespace's LimitRanges, the RuntimeClasses, the runtime and the TrainJob")
	// Keep the objects as written (Create overwrites them with the stored,
	// defaulted objects) to check ApplyDefaults against the apiserver.
	var offline render.Input
	for _, lr := range p.limitRanges {
		lr = lr.DeepCopy()
		lr.Namespace = ns
		offline.LimitRanges = append(offline.LimitRanges, *lr.DeepCopy())
		Expect(env.Client.Create(ctx, lr)).To(Succeed())
	}
	for _, rc := range p.runtimeClasses {
		if err := env.Client.Create(ctx, rc.DeepCopy()); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	for _, pc := range p.priorityClasses {
		pc = pc.DeepCopy()
		// The Priority plugin refuses a second globalDefault class until its
		// informer has seen an earlier case's deleted.
		Eventually(func() error { return env.Client.Create(ctx, pc.DeepCopy()) }).Should(Succeed(), "creating PriorityClass %s", pc.Name)
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, pc))).To(Succeed()) })
	}
	rt := p.runtime(ns, rtName)
	if tr, ok := rt.(*trainer.TrainingRuntime); ok {
		tr.Namespace = ns
	}
	offline.Runtime = rt.DeepCopyObject().(client.Object)
	Expect(env.Client.Create(ctx, rt)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, rt))).To(Succeed()) })
	tj := p.trainJob(ns, rt.GetName())
	offline.TrainJob = tj.DeepCopy()
	Expect(env.Client.Create(ctx, tj)).To(Succeed())

	By("reading back the JobSet and hostfile the Trainer created")
	js := &jobsetv1alpha2.JobSet{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobName}, js)).To(Succeed())
	}).Should(Succeed())
	hostfile := &corev1.ConfigMap{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobName + constants.MPIHostfileConfigMapSuffix}, hostfile)).To(Succeed())
	}).Should(Succeed())

	By("rendering the stored TrainJob offline")
	in := render.Input{TrainJob: &trainer.TrainJob{}}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: jobName}, in.TrainJob)).To(Succeed())
	in.Runtime = rt.DeepCopyObject().(client.Object)
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rt), in.Runtime)).To(Succeed())
	var lrs corev1.LimitRangeList
	Expect(env.Client.List(ctx, &lrs, client.InNamespace(ns))).To(Succeed())
	in.LimitRanges = lrs.Items
	var rcs nodev1.RuntimeClassList
	Expect(env.Client.List(ctx, &rcs)).To(Succeed())
	in.RuntimeClasses = rcs.Items
	var pcs schedulingv1.PriorityClassList
	Expect(env.Client.List(ctx, &pcs)).To(Succeed())
	in.PriorityClasses, offline.PriorityClasses = pcs.Items, pcs.Items
	var sas corev1.ServiceAccountList
	Expect(env.Client.List(ctx, &sas, client.InNamespace(ns))).To(Succeed())
	in.ServiceAccounts, offline.ServiceAccounts = sas.Items, sas.Items
	view, err := renderer.Render(ctx, in)
	Expect(err).NotTo(HaveOccurred())

	By("defaulting the objects as written, as mpiguard check does, and rendering them")
	Expect(render.ApplyDefaults(offline.TrainJob, offline.Runtime)).To(Succeed())
	for i := range offline.LimitRanges {
		Expect(render.ApplyDefaults(&offline.LimitRanges[i])).To(Succeed())
	}
	Expect(cmp.Diff(in.TrainJob.Spec, offline.TrainJob.Spec, quantityEqual, cmpopts.EquateEmpty())).To(BeEmpty(),
		"TrainJob spec (-apiserver +ApplyDefaults)")
	Expect(cmp.Diff(runtimeSpec(in.Runtime), runtimeSpec(offline.Runtime), quantityEqual, cmpopts.EquateEmpty())).To(BeEmpty(),
		"runtime spec (-apiserver +ApplyDefaults)")
	Expect(lrs.Items).To(HaveLen(len(offline.LimitRanges)))
	for _, stored := range lrs.Items {
		idx := slices.IndexFunc(offline.LimitRanges, func(lr corev1.LimitRange) bool { return lr.Name == stored.Name })
		Expect(idx).NotTo(Equal(-1), "LimitRange %s", stored.Name)
		Expect(cmp.Diff(stored.Spec, offline.LimitRanges[idx].Spec, quantityEqual, cmpopts.EquateEmpty())).To(BeEmpty(),
			"LimitRange %s spec (-apiserver +ApplyDefaults)", stored.Name)
	}
	offline.RuntimeClasses = in.RuntimeClasses
	offlineView, err := renderer.Render(ctx, offline)
	Expect(err).NotTo(HaveOccurred())
	Expect(cmp.Diff(view, offlineView, quantityEqual, cmpopts.EquateEmpty())).To(BeEmpty(),
		"JobView from the stored objects (-) and from the objects as written (+)")

	By("comparing replicated jobs, pod counts and pod templates with the JobSet")
	Expect(view.ReplicatedJobs).To(HaveLen(len(js.Spec.ReplicatedJobs)))
	for i := range js.Spec.ReplicatedJobs {
		rj, rv := &js.Spec.ReplicatedJobs[i], view.ReplicatedJobs[i]
		Expect(rv.Name).To(Equal(rj.Name))
		Expect(rv.Pods).To(Equal(jobSetPods(rj)), "pods of replicated job %s", rj.Name)
		Expect(cmp.Diff(rj.Template.Spec.Template, rv.PodTemplate, quantityEqual, cmpopts.EquateEmpty())).To(BeEmpty(),
			"pod template of replicated job %s (-Trainer +JobView)", rj.Name)
	}
	Expect(view.Hostfile).To(Equal(nonEmptyLines(hostfile.Data[constants.MPIHostfileName])), "hostfile")

	By("creating the JobSet's pods under a ResourceQuota and comparing what the apiserver charged")
	names := measurableNames(view.Total)
	createQuota(ctx, ns, "measure", names)
	var rejected []string
	for i := range js.Spec.ReplicatedJobs {
		rj, rv := &js.Spec.ReplicatedJobs[i], view.ReplicatedJobs[i]
		before := quotaUsed(ctx, ns, "measure")
		if err := createPods(ctx, ns, jobName, rj, rv.Pods, false); err != nil {
			Expect(apierrors.IsInvalid(err) || apierrors.IsForbidden(err)).To(BeTrue(), "unexpected error: %v", err)
			Expect(hasProblemFor(view, rj.Name)).To(BeTrue(),
				"the apiserver rejects the pods of %s but the JobView reports no problem for them: %v", rj.Name, err)
			rejected = append(rejected, rj.Name)
			continue
		}
		Expect(hasProblemFor(view, rj.Name)).To(BeFalse(),
			"the JobView reports problems %v for %s but the apiserver admits its pods", view.Problems, rj.Name)
		if rv.Pods > 0 { // the PriorityClass the apiserver gave an admitted pod
			admittedPod := &corev1.Pod{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-%s-0", jobName, rj.Name)}, admittedPod)).To(Succeed())
			Expect(rv.PriorityClassName).To(Equal(admittedPod.Spec.PriorityClassName), "PriorityClass of replicated job %s (JobView vs apiserver)", rj.Name)
			Expect(rv.ServiceAccountName).To(Equal(admittedPod.Spec.ServiceAccountName), "ServiceAccount of replicated job %s (JobView vs apiserver)", rj.Name)
			Expect(render.AdmittedTolerations(&rv.PodTemplate.Spec, runtimeClassTolerations(in.RuntimeClasses, rv.PodTemplate.Spec.RuntimeClassName))).To(
				ConsistOf(admittedPod.Spec.Tolerations), "tolerations of replicated job %s (AdmittedTolerations vs apiserver)", rj.Name)
		}
		charged := sub(quotaUsed(ctx, ns, "measure"), before)
		Expect(milli(scaled(rv.PerPod, rv.Pods), names)).To(Equal(milli(charged, names)),
			"charge of replicated job %s (JobView vs apiserver, milli-units)", rj.Name)
	}
	anyRejected := len(rejected) > 0
	if !p.random {
		Expect(anyRejected).To(Equal(p.wantProblems), "rejected replicated jobs: %v; problems: %v", rejected, view.Problems)
	}
	tallyCase(p, rejected)
	if len(rejected) == 0 {
		Expect(milli(view.Total.QuotaUsage(), names)).To(Equal(milli(quotaUsed(ctx, ns, "measure"), names)), "total charge")
	}

	By("checking the quota rule that every container declares cpu and memory")
	expectMissingRejected(ctx, ns, js, view)
}

// runtimeClassTolerations are the scheduling tolerations of the RuntimeClass
// name (nil: none) among classes.
func runtimeClassTolerations(classes []nodev1.RuntimeClass, name *string) []corev1.Toleration {
	if name == nil {
		return nil
	}
	i := slices.IndexFunc(classes, func(rc nodev1.RuntimeClass) bool { return rc.Name == *name })
	if i < 0 || classes[i].Scheduling == nil {
		return nil
	}
	return classes[i].Scheduling.Tolerations
}

func runtimeSpec(obj client.Object) *trainer.TrainingRuntimeSpec {
	switch rt := obj.(type) {
	case *trainer.ClusterTrainingRuntime:
		return &rt.Spec
	case *trainer.TrainingRuntime:
		return &rt.Spec
	}
	return nil
}

func nonEmptyLines(s string) []string {
	out := []string{}
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func hasProblemFor(view *render.JobView, rj string) bool {
	prefix := "spec.replicatedJobs[" + rj + "]"
	for _, p := range view.Problems {
		if strings.HasPrefix(p.Field, prefix) {
			return true
		}
	}
	return false
}

// expectMissingRejected adds a quota on cpu and memory (requests and limits) that
// admits no pod at all (pods: 0) and dry-runs one pod per replicated job. The quota
// evaluator checks declarations before usage, so a pod is rejected with "must
// specify" exactly when its JobView charge lists undeclared resources, and with
// "exceeded quota" otherwise.
func expectMissingRejected(ctx context.Context, ns string, js *jobsetv1alpha2.JobSet, view *render.JobView) {
	const quota = "require-declarations"
	createQuota(ctx, ns, quota, []corev1.ResourceName{
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
	})
	q := &corev1.ResourceQuota{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: quota}, q)).To(Succeed())
	q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("0")
	Expect(env.Client.Update(ctx, q)).To(Succeed())
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used[corev1.ResourcePods] = resource.MustParse("0")
	Expect(env.Client.Status().Update(ctx, q)).To(Succeed())

	for i := range js.Spec.ReplicatedJobs {
		rj, rv := &js.Spec.ReplicatedJobs[i], view.ReplicatedJobs[i]
		if hasProblemFor(view, rj.Name) {
			continue
		}
		probe := rj.DeepCopy()
		probe.Name += "-probe"
		// Quota admission reads quotas from an informer: retry until it enforces this one.
		var err error
		Eventually(func(g Gomega) {
			err = createPods(ctx, ns, jobName, probe, 1, true)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(quota))
		}).Should(Succeed(), "replicated job %s: pods are not checked against quota %s", rj.Name, quota)
		missing := len(rv.PerPod.MissingRequests)+len(rv.PerPod.MissingLimits) > 0
		if !missing {
			Expect(err.Error()).NotTo(ContainSubstring("must specify"), "replicated job %s declares cpu and memory per the JobView", rj.Name)
			Expect(err.Error()).To(ContainSubstring("exceeded quota"))
			continue
		}
		Expect(err.Error()).To(ContainSubstring("must specify"), "replicated job %s: JobView says %v requests and %v limits are undeclared",
			rj.Name, rv.PerPod.MissingRequests, rv.PerPod.MissingLimits)
		for _, r := range rv.PerPod.MissingRequests {
			Expect(err.Error()).To(ContainSubstring("requests." + string(r)))
		}
		for _, r := range rv.PerPod.MissingLimits {
			Expect(err.Error()).To(ContainSubstring("limits." + string(r)))
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if !slices.Contains(rv.PerPod.MissingRequests, r) {
				Expect(err.Error()).NotTo(ContainSubstring("requests."+string(r)), "JobView says %s declares a %s request", rj.Name, r)
			}
			if !slices.Contains(rv.PerPod.MissingLimits, r) {
				Expect(err.Error()).NotTo(ContainSubstring("limits."+string(r)), "JobView says %s declares a %s limit", rj.Name, r)
			}
		}
	}
}
