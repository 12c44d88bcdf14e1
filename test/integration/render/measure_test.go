package render

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/internal/render"
)

// The suite does not compute charges itself: it creates the pods of the real
// JobSet in a namespace with a ResourceQuota and reads back what the apiserver's
// quota admission charged (status.used). Defaulting, LimitRanger, RuntimeClass
// admission and the quota evaluator are thus the apiserver's own.

// measuredResources are the ResourceQuota names the suite measures.
var measuredResources = []corev1.ResourceName{
	corev1.ResourcePods, "count/pods",
	corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU,
	corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory,
	corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage,
	"requests.nvidia.com/gpu",
}

// quotaRequired maps each resource a quota makes every container declare to the
// quota names that trigger the requirement.
var quotaRequired = map[corev1.ResourceName][]corev1.ResourceName{
	corev1.ResourceCPU:    {corev1.ResourceCPU, corev1.ResourceRequestsCPU},
	corev1.ResourceMemory: {corev1.ResourceMemory, corev1.ResourceRequestsMemory},
}

var limitRequired = map[corev1.ResourceName]corev1.ResourceName{
	corev1.ResourceCPU:    corev1.ResourceLimitsCPU,
	corev1.ResourceMemory: corev1.ResourceLimitsMemory,
}

// measurableNames drops the names whose quota would reject pods that do not
// declare them (those are checked separately, by expectMissingRejected).
func measurableNames(total render.Charge) []corev1.ResourceName {
	skip := map[corev1.ResourceName]bool{}
	for _, r := range total.MissingRequests {
		for _, n := range quotaRequired[r] {
			skip[n] = true
		}
	}
	for _, r := range total.MissingLimits {
		skip[limitRequired[r]] = true
	}
	var out []corev1.ResourceName
	for _, n := range measuredResources {
		if !skip[n] {
			out = append(out, n)
		}
	}
	return out
}

// createQuota creates a ResourceQuota with huge hard limits on names and fills its
// status as the quota controller (not running in envtest) would. It returns once
// the apiserver's quota admission enforces that status: admission reads quotas
// from an informer, and pods created before it sees status.hard are charged
// nothing.
func createQuota(ctx context.Context, ns, name string, names []corev1.ResourceName) {
	GinkgoHelper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	for _, n := range names {
		q.Spec.Hard[n] = resource.MustParse("1Pi")
	}
	// A sentinel no pod uses: admission rejects PodTemplates once it sees the status.
	q.Spec.Hard[quotaSentinel] = resource.MustParse("0")
	Expect(env.Client.Create(ctx, q)).To(Succeed())
	used := corev1.ResourceList{}
	for n := range q.Spec.Hard {
		used[n] = resource.MustParse("0")
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: used}
	Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
	Eventually(probeQuota).WithArguments(ctx, ns).Should(MatchError(ContainSubstring("exceeded quota: "+name)),
		"quota admission does not enforce ResourceQuota %s/%s", ns, name)

	// Drop the sentinel again, so that the next quota's probe is refused by that
	// quota only (admission names just the first quota a request exceeds).
	delete(q.Spec.Hard, quotaSentinel)
	Expect(env.Client.Update(ctx, q)).To(Succeed())
	delete(q.Status.Hard, quotaSentinel)
	delete(q.Status.Used, quotaSentinel)
	Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
	Eventually(probeQuota).WithArguments(ctx, ns).Should(Succeed(), "quota admission still enforces the sentinel of %s/%s", ns, name)
}

// probeQuota dry-runs the creation of a PodTemplate, which only createQuota's
// sentinel limits.
func probeQuota(ctx context.Context, ns string) error {
	return env.Client.Create(ctx, &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota-probe"},
		Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}},
	}, client.DryRunAll)
}

// quotaSentinel is the resource createQuota limits to 0 to see when quota
// admission enforces a new quota.
const quotaSentinel corev1.ResourceName = "count/podtemplates"

func quotaUsed(ctx context.Context, ns, name string) corev1.ResourceList {
	q := &corev1.ResourceQuota{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, q)).To(Succeed())
	return q.Status.Used
}

// jobSetPods is how many pods each replicated job of the real JobSet runs.
func jobSetPods(rj *jobsetv1alpha2.ReplicatedJob) int32 {
	p := ptr.Deref(rj.Template.Spec.Parallelism, 1)
	if c := rj.Template.Spec.Completions; c != nil && *c < p {
		p = *c
	}
	return rj.Replicas * p
}

// createPods creates n pods from a replicated job's template, as the Job controller
// would, and returns the apiserver's first rejection, if any.
func createPods(ctx context.Context, ns, jobName string, rj *jobsetv1alpha2.ReplicatedJob, n int32, dryRun bool) error {
	tmpl := rj.Template.Spec.Template
	for i := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: fmt.Sprintf("%s-%s-%d", jobName, rj.Name, i),
				Labels: tmpl.Labels, Annotations: tmpl.Annotations,
			},
			Spec: *tmpl.Spec.DeepCopy(),
		}
		var opts []client.CreateOption
		if dryRun {
			opts = append(opts, client.DryRunAll)
		}
		var err error
		// The quota admission plugin may not have seen the quota's status yet.
		for range 50 {
			if err = env.Client.Create(ctx, pod, opts...); err == nil || !strings.Contains(err.Error(), "status unknown for quota") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// milli turns a list into comparable milli-units restricted to names.
func milli(list corev1.ResourceList, names []corev1.ResourceName) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	for _, n := range names {
		q := list[n]
		out[n] = q.MilliValue()
	}
	return out
}

func sub(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	for n, q := range b {
		v := out[n]
		v.Sub(q)
		out[n] = v
	}
	return out
}

// scaled is what n pods of perPod are charged, as the JobView computes totals.
func scaled(perPod render.Charge, n int32) corev1.ResourceList {
	var c render.Charge
	for range n {
		c.Pods += perPod.Pods
		c.Requests = addList(c.Requests, perPod.Requests)
		c.Limits = addList(c.Limits, perPod.Limits)
	}
	return c.QuotaUsage()
}

func addList(a, b corev1.ResourceList) corev1.ResourceList {
	if a == nil {
		a = corev1.ResourceList{}
	}
	for n, q := range b {
		v := a[n]
		v.Add(q)
		a[n] = v
	}
	return a
}
