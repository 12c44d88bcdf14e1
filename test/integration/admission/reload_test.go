package admission

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
)

// A replacement max-duration policy that compliance might push: a hard
// 1-hour limit with its own message.
const oneHourPolicy = `package mpiguard.policies.max_duration

deny contains {"field": "spec.activeDeadlineSeconds", "msg": msg} if {
	input.trainJob.activeDeadlineSeconds > 3600
	msg := sprintf("compliance: TrainJobs may run at most 1 hour, this one asks for %d seconds; set spec.activeDeadlineSeconds to 3600 or less", [input.trainJob.activeDeadlineSeconds])
}
`

// The same policy, cut off mid-rule: a parse error.
const brokenPolicy = `package mpiguard.policies.max_duration

deny contains {"field": "spec.activeDeadlineSeconds", "msg": msg} if {{
`

var _ = Describe("policy hot reload from ConfigMaps", Ordered, func() {
	var (
		ns string
		rt string
		cm *corev1.ConfigMap
	)
	BeforeAll(func(ctx context.Context) {
		ns = env.Namespace(ctx, nil)
		rt = createRuntime(ctx, fixtures.MPIRuntime("reload-"+ns)).Name
		DeferCleanup(func(ctx context.Context) {
			if cm != nil {
				Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cm))).To(Succeed())
			}
		})
	})

	// twoHours is allowed by the embedded policy (ceiling 168 hours) and denied
	// by the replacement.
	twoHours := func(name string) error {
		return env.Client.Create(context.Background(), fixtures.TrainJob(ns, name, rt).NumNodes(1).ActiveDeadlineSeconds(7200).Obj())
	}
	status := func(ctx context.Context) string {
		var got corev1.ConfigMap
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &got)).To(Succeed())
		return got.Annotations["mpiguard.io/policy-status"]
	}

	It("rejects a broken policy with its compile error and keeps deciding as before", func(ctx context.Context) {
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: env.PolicyNamespace, Name: "compliance-max-duration", Labels: map[string]string{"mpiguard.io/policy": "rego"}},
			Data:       map[string]string{"max_duration.rego": brokenPolicy},
		}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		Eventually(status).WithContext(ctx).WithTimeout(30 * time.Second).Should(And(
			MatchRegexp(`^rejected: policy compile error: compliance-max-duration/max_duration\.rego:\d+: `),
			ContainSubstring("still serving policy set"),
		))
		var events corev1.EventList
		Eventually(func(g Gomega) {
			g.Expect(env.Client.List(ctx, &events, client.InNamespace(env.PolicyNamespace))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(HaveField("Reason", "PolicyRejected")))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(twoHours("before-fix")).To(Succeed(), "the last good (embedded) policy set must keep serving")
	})

	It("serves the fixed policy without a restart", func(ctx context.Context) {
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
		cm.Data["max_duration.rego"] = oneHourPolicy
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		Eventually(status).WithContext(ctx).WithTimeout(30 * time.Second).Should(HavePrefix("loaded: policy set "))
		attempt := 0
		Eventually(func() string {
			// A fresh name per attempt: one admitted before the reload took effect must not turn later attempts into AlreadyExists.
			attempt++
			err := twoHours(fmt.Sprintf("after-fix-%d", attempt))
			if err == nil {
				return "admitted"
			}
			return err.Error()
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(ContainSubstring("[max-duration] spec.activeDeadlineSeconds: compliance: TrainJobs may run at most 1 hour"))
	})

	It("goes back to the embedded policy when the ConfigMap is deleted", func(ctx context.Context) {
		Expect(env.Client.Delete(ctx, cm)).To(Succeed())
		Eventually(func() error { return twoHours("after-delete") }).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})
