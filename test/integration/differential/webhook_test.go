package differential

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	quotav1alpha1 "github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// poolNames are the pool runtimes, created once for every random cluster.
var poolNames = map[string]bool{}

// createPoolRuntimes creates every runtime of fixtures.RuntimePool, from the
// same documents the random clusters give check.
func createPoolRuntimes(ctx context.Context) {
	GinkgoHelper()
	pool, err := fixtures.RuntimePool()
	Expect(err).NotTo(HaveOccurred())
	for _, p := range pool {
		rt := &trainer.ClusterTrainingRuntime{}
		Expect(yaml.Unmarshal([]byte(p.Doc), rt)).To(Succeed())
		// The apiserver drops the runtime template webhook a moment after
		// its configuration changed (dropRuntimeTemplateWebhooks).
		Eventually(func() error { return env.Client.Create(ctx, rt.DeepCopy()) }).Should(Succeed(), "creating pool runtime %s", p.Name)
		waitCached(ctx, rt)
		poolNames[p.Name] = true
	}
}

// warningLog collects the admission warnings the apiserver returns.
type warningLog struct {
	mu   sync.Mutex
	list []string
}

func (w *warningLog) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

var (
	warned     = &warningLog{}
	submitter  client.Client
	submitOnce sync.Once
)

// submitClient is the admin's client with warnings collected in warned
// (cases run one at a time).
func submitClient() client.Client {
	GinkgoHelper()
	submitOnce.Do(func() {
		cfg := rest.CopyConfig(env.Config)
		cfg.WarningHandlerWithContext = warned
		var err error
		submitter, err = client.New(cfg, client.Options{Scheme: scheme.New()})
		Expect(err).NotTo(HaveOccurred())
	})
	return submitter
}

// viaWebhook creates the case's objects in the apiserver and submits its
// TrainJobs in document order, one outcome each. Every TrainJob but the last
// is created for real, so an admitted one holds its quota reservation for
// the next, as check counts TrainJobs allowed earlier in the input; the last
// is a dry run (dryRun=All writes no reservation). With cleanup, everything
// created is deleted again when the spec ends: samples reuse names.
func viaWebhook(ctx context.Context, source, docs string, cleanup bool) []outcome {
	GinkgoHelper()
	c := check.NewCluster()
	Expect(c.Read(source, strings.NewReader(docs))).To(Succeed())
	created := setUp(ctx, c)
	if cleanup {
		DeferCleanup(tearDown, created)
	}
	out := make([]outcome, len(c.TrainJobs))
	for i, s := range c.TrainJobs {
		last := i == len(c.TrainJobs)-1
		out[i] = submit(ctx, s.TrainJob, !last)
		if !last && out[i].Allowed {
			job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: s.TrainJob.Namespace, Name: s.TrainJob.Name}}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			created.objects = append(created.objects, job)
			waitCached(ctx, job)
			waitReservationCached(ctx, job.Namespace)
		}
	}
	return out
}

// created is what a case added to the apiserver.
type created struct {
	objects    []client.Object
	namespaces []string
	// existing are objects of kinds a job creates, which mpiguard does not
	// cache: deleted without waiting for its cache.
	existing []client.Object
}

// setUp creates the cluster's objects: namespaces (an existing one gets the
// document's labels and annotations), RuntimeClasses, PriorityClasses, runtimes (pool runtimes
// exist already), LimitRanges, ServiceAccounts and ResourceQuotas with their status.used
// written through the status subresource (envtest runs no quota controller),
// Volcano Queues and Nodes with their status.
// It returns once mpiguard's cache shows all of them, as the webhooks read
// from it.
func setUp(ctx context.Context, c *check.Cluster) *created {
	GinkgoHelper()
	out := &created{}
	namespaces := map[string]bool{}
	for name := range c.Namespaces {
		namespaces[name] = true
	}
	for _, s := range c.TrainJobs {
		namespaces[s.TrainJob.Namespace] = true
	}
	for _, q := range c.Quotas {
		namespaces[q.Namespace] = true
	}
	for _, l := range c.LimitRanges {
		namespaces[l.Namespace] = true
	}
	for _, sa := range c.ServiceAccounts {
		namespaces[sa.Namespace] = true
	}
	for _, r := range c.Runtimes {
		namespaces[r.Namespace] = true
	}
	var cache []client.Object
	for name := range namespaces {
		ns := ensureNamespace(ctx, name, c.Namespaces[name])
		out.namespaces = append(out.namespaces, name)
		cache = append(cache, ns)
	}
	add := func(obj client.Object) {
		Expect(env.Client.Create(ctx, obj)).To(Succeed(), "creating %T %s", obj, obj.GetName())
		out.objects = append(out.objects, obj)
		cache = append(cache, obj)
	}
	for i := range c.RuntimeClasses {
		add(c.RuntimeClasses[i].DeepCopy())
	}
	for i := range c.PriorityClasses {
		add(c.PriorityClasses[i].DeepCopy())
	}
	for name, rt := range c.ClusterRuntimes {
		if !poolNames[name] {
			add(rt.DeepCopy())
		}
	}
	for _, rt := range c.Runtimes {
		add(rt.DeepCopy())
	}
	for i := range c.LimitRanges {
		add(c.LimitRanges[i].DeepCopy())
	}
	for i := range c.ServiceAccounts {
		sa := c.ServiceAccounts[i].DeepCopy()
		Expect(env.Client.Create(ctx, sa)).To(Succeed(), "creating ServiceAccount %s", sa.Name)
		out.objects = append(out.objects, sa)
		// mpiguard reads ServiceAccounts' metadata only (its own informer).
		seen := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: sa.Namespace, Name: sa.Name, ResourceVersion: sa.ResourceVersion}}
		seen.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ServiceAccount"))
		cache = append(cache, seen)
	}
	// Objects a job would create exist already: mpiguard reads them live,
	// by name (it caches none). Created before the quotas, whose status.used
	// (as the sample writes it) counts them: created after, the apiserver's
	// quota admission would charge them once more.
	for _, obj := range c.Existing {
		obj = obj.DeepCopy()
		Expect(env.Client.Create(ctx, obj)).To(Succeed(), "creating %s %s", obj.GetKind(), obj.GetName())
		out.existing = append(out.existing, obj)
	}
	for i := range c.Quotas {
		q := c.Quotas[i].DeepCopy()
		status := q.Status
		add(q)
		if len(status.Hard) > 0 || len(status.Used) > 0 {
			q.Status = status
			Expect(env.Client.Status().Update(ctx, q)).To(Succeed(), "writing the status of ResourceQuota %s", q.Name)
		}
	}
	// addWithStatus creates obj, then writes the status it was read with
	// (setStatus puts it back after Create replaced it with the stored one).
	addWithStatus := func(obj client.Object, setStatus func()) {
		add(obj)
		setStatus()
		Expect(env.Client.Status().Update(ctx, obj)).To(Succeed(), "writing the status of %T %s", obj, obj.GetName())
	}
	for i := range c.Queues {
		// Volcano Queues (cluster-scoped) with the status Volcano would
		// write: their state and what is allocated.
		q := c.Queues[i].DeepCopy()
		addWithStatus(q, func() { q.Status = c.Queues[i].Status })
	}
	for i := range c.Nodes {
		// Nodes (cluster-scoped; envtest runs no kubelet) with the
		// allocatable a kubelet would report.
		n := c.Nodes[i].DeepCopy()
		addWithStatus(n, func() { n.Status = c.Nodes[i].Status })
	}
	for _, obj := range cache {
		waitCached(ctx, obj)
	}
	return out
}

// ensureNamespace creates namespace name, or sets the labels and annotations
// of an existing one, to what doc says (none when doc is nil).
func ensureNamespace(ctx context.Context, name string, doc *corev1.Namespace) *corev1.Namespace {
	GinkgoHelper()
	want := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if doc != nil {
		want.Labels, want.Annotations = doc.Labels, doc.Annotations
	}
	ns := &corev1.Namespace{}
	err := env.Client.Get(ctx, client.ObjectKey{Name: name}, ns)
	if apierrors.IsNotFound(err) {
		Expect(env.Client.Create(ctx, want)).To(Succeed(), "creating namespace %s", name)
		return want
	}
	Expect(err).NotTo(HaveOccurred())
	ns.Labels, ns.Annotations = want.Labels, want.Annotations
	Expect(env.Client.Update(ctx, ns)).To(Succeed(), "resetting namespace %s", name)
	return ns
}

// tearDown deletes what a case created and mpiguard's reservations of its
// namespaces, and waits until mpiguard's cache has forgotten them.
func tearDown(ctx context.Context, c *created) {
	GinkgoHelper()
	for _, obj := range c.existing {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed(), "deleting %T %s", obj, obj.GetName())
	}
	gone := append([]client.Object{}, c.objects...)
	for _, ns := range c.namespaces {
		gone = append(gone, &quotav1alpha1.QuotaReservation{ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: ns}})
	}
	for _, obj := range gone {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, obj))).To(Succeed(), "deleting %T %s", obj, obj.GetName())
	}
	for _, obj := range gone {
		key := client.ObjectKeyFromObject(obj)
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Manager.GetClient().Get(ctx, key, obj.DeepCopyObject().(client.Object)))
		}).WithPolling(5*time.Millisecond).Should(BeTrue(), "mpiguard's cache still has %T %s", obj, key)
	}
}

// waitCached waits until mpiguard's cache has obj at its resourceVersion or later.
func waitCached(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	want := resourceVersion(obj)
	key := client.ObjectKeyFromObject(obj)
	cached := obj.DeepCopyObject().(client.Object)
	Eventually(func() bool {
		return env.Manager.GetClient().Get(ctx, key, cached) == nil && resourceVersion(cached) >= want
	}).WithPolling(5*time.Millisecond).Should(BeTrue(), "mpiguard's cache never showed %T %s at resourceVersion %d", obj, key, want)
}

// waitReservationCached waits until mpiguard's cache has the namespace's
// QuotaReservation as the apiserver has it (if it has one).
func waitReservationCached(ctx context.Context, ns string) {
	GinkgoHelper()
	res := &quotav1alpha1.QuotaReservation{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: env.PolicyNamespace, Name: ns}, res)
	if apierrors.IsNotFound(err) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	waitCached(ctx, res)
}

func resourceVersion(obj client.Object) int64 {
	n, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	return n
}

// webhookPrefix is how the apiserver introduces a webhook's rejection.
var webhookPrefix = regexp.MustCompile(`^admission webhook "[^"]*" denied the request: `)

// submit creates the TrainJob (as a dry run when dryRun) and returns what
// the user sees: the denial's violation lines or the error, the admission
// warnings, and the admitted object's spec.
func submit(ctx context.Context, input *trainer.TrainJob, persisted bool) outcome {
	GinkgoHelper()
	tj := input.DeepCopy()
	var opts []client.CreateOption
	if !persisted {
		opts = append(opts, client.DryRunAll)
	}
	warned.take()
	err := submitClient().Create(ctx, tj, opts...)
	o := outcome{TrainJob: input.Namespace + "/" + input.Name, Warnings: warned.take()}
	if err == nil {
		o.Allowed = true
		Expect(render.ApplyDefaults(tj)).To(Succeed())
		o.Spec = specOf(tj)
		return o.sorted()
	}
	msg := err.Error()
	if status, ok := err.(apierrors.APIStatus); ok {
		msg = status.Status().Message
	}
	msg = webhookPrefix.ReplaceAllString(msg, "")
	header := "TrainJob " + o.TrainJob + " violates "
	if !strings.HasPrefix(msg, header) {
		o.Error = msg
		return o.sorted()
	}
	o.Denials = strings.Split(msg, "\n- ")[1:]
	for i, d := range o.Denials {
		// The docs link each policy's last line ends with is the
		// webhook's alone (check shows it nowhere); internal/pipeline's
		// tests check the links.
		o.Denials[i] = docsLink.ReplaceAllString(d, "")
	}
	return o.sorted()
}

// docsLink is the link a denial line ends with (pipeline.WithDocsLink).
var docsLink = regexp.MustCompile(` \(see [^ ()]+\)$`)
