package lifecycle

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

var _ = Describe("pods that carry a job's JobSet name", func() {
	It("do not release the job's reservation unless they are its JobSet's", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		gpuQuota(ctx, ns, "16")
		rt := gpuRuntime(ctx, "strays-"+ns, "8")
		job := admitted(ctx, gpuJob(ns, "a", rt.Name, 2, 8).Obj())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
		js := &jobset.JobSet{}
		Eventually(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(job), js) }, timeout, interval).Should(Succeed())

		By("a Launcher and two Workers labelled as a's, from another JobSet (an earlier run of the name)")
		for _, rj := range []string{"launcher", "node", "node"} {
			Expect(env.Client.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "a-" + rj + "-", Labels: map[string]string{
					jobset.JobSetNameKey: "a", jobset.ReplicatedJobNameKey: rj, jobset.JobSetUIDKey: "an-earlier-jobset",
				}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			})).To(Succeed())
		}
		Consistently(func() bool { return entryOf(ctx, job) != nil }).WithTimeout(3*time.Second).WithPolling(interval).Should(BeTrue(),
			"pods that are not a's JobSet's released a's reservation")
		Expect(denial(ctx, gpuJob(ns, "b", rt.Name, 1, 8).Obj())).To(ContainSubstring(ns + "/a"))
	})
})
