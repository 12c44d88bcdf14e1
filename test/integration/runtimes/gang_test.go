package runtimes

import (
	"context"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

var _ = Describe("Gang-scheduling variant", func() {
	It("gets a coscheduling PodGroup for the launcher and every Worker from the real Trainer, and pods on the gang scheduler", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		job := &trainer.TrainJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gang"},
			Spec: trainer.TrainJobSpec{
				RuntimeRef: trainer.RuntimeRef{Name: "mpiguard-openmpi-coscheduling"},
				Trainer:    &trainer.Trainer{NumNodes: ptr.To[int32](3), Args: []string{"python", "train.py"}},
			},
		}
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		// The shared client's scheme lacks PodGroups; read them with one that has them.
		scheme := scheme.New()
		Expect(schedulerpluginsv1alpha1.AddToScheme(scheme)).To(Succeed())
		c, err := client.New(env.Config, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
		var pg schedulerpluginsv1alpha1.PodGroup
		Eventually(func() error { return c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gang"}, &pg) }, timeout, interval).Should(Succeed())
		Expect(pg.Spec.MinMember).To(BeEquivalentTo(3), "1 launcher + 2 Workers: the launcher is one of the 3 nodes")
		Expect(*pg.Spec.ScheduleTimeoutSeconds).To(BeEquivalentTo(catalog.CoschedulingTimeoutSeconds))

		var js jobsetv1alpha2.JobSet
		Eventually(func() error { return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gang"}, &js) }, timeout, interval).Should(Succeed())
		for _, rj := range js.Spec.ReplicatedJobs {
			pod := rj.Template.Spec.Template
			Expect(pod.Spec.SchedulerName).To(Equal(catalog.CoschedulingSchedulerName), rj.Name)
			Expect(pod.Labels).To(HaveKeyWithValue(schedulerpluginsv1alpha1.PodGroupLabel, "gang"), rj.Name)
		}
	})
})
