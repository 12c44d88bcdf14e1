package follow

import (
	"bytes"
	"context"
	"strconv"
	"sync"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/follow"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// KWOK stage annotations (test/kwok/stages and KWOK's own pod stages).
const (
	exitCode           = "mpiguard.io/kwok-exit-code"
	exitReason         = "mpiguard.io/kwok-exit-reason"
	terminationMessage = "mpiguard.io/kwok-termination-message"
	imagePullFailure   = "mpiguard.io/kwok-image-pull-failure"
	// Pods keep running: KWOK's pod-complete never ends them (both).
	keepRunning = "mpiguard.io/kwok-keep-running"
	noComplete  = "pod-complete.stage.kwok.x-k8s.io/weight"
	// Pods never become Ready through KWOK's pod-ready.
	noReady = "pod-ready.stage.kwok.x-k8s.io/weight"
)

// runtime creates TrainingRuntime name in ns: the curated OpenMPI runtime
// with these annotations on its Launcher's and Workers' pods, which keep
// running unless a stage ends them (an annotation set to "" is dropped).
func runtime(ctx context.Context, ns, name string, launcher, workers map[string]string) {
	GinkgoHelper()
	var c trainer.ClusterTrainingRuntime
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: curated}, &c)).To(Succeed())
	rt := &trainer.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: *c.Spec.DeepCopy()}
	for i := range rt.Spec.Template.Spec.ReplicatedJobs {
		rj := &rt.Spec.Template.Spec.ReplicatedJobs[i]
		meta := &rj.Template.Spec.Template.ObjectMeta
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		meta.Annotations[noComplete] = "0"
		meta.Annotations[keepRunning] = "true"
		// JobSet's webhook, which does not run here, defaults them so.
		if rj.Template.Spec.Template.Spec.RestartPolicy == "" {
			rj.Template.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}
		if rj.Template.Spec.CompletionMode == nil {
			rj.Template.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}
		add := workers
		if rj.Name == "launcher" {
			add = launcher
		}
		for k, v := range add {
			meta.Annotations[k] = v
			if v == "" && k != terminationMessage {
				delete(meta.Annotations, k)
			}
		}
	}
	Expect(env.Client.Create(ctx, rt)).To(Succeed())
}

// submit creates an MPI TrainJob on runtime rt: the Launcher and workers
// Workers, each with gpus GPUs (and Slots per worker) and a 64Gi memory limit.
func submit(ctx context.Context, ns, name, rt string, workers, gpus int32) *trainer.TrainJob {
	GinkgoHelper()
	b := fixtures.TrainJob(ns, name, rt).NamespacedRuntime().NumNodes(workers + 1)
	if gpus > 0 {
		q := strconv.Itoa(int(gpus))
		b = b.NumProcPerNode(gpus).Requests("nvidia.com/gpu", q).Limits("nvidia.com/gpu", q, "memory", "64Gi")
	} else {
		b = b.Limits("memory", "64Gi")
	}
	job := b.Obj()
	Expect(env.Client.Create(ctx, job)).To(Succeed())
	return job
}

// followEvents are the follower's Events on job with reason, oldest first.
func followEvents(ctx context.Context, g Gomega, job *trainer.TrainJob, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(env.Client.List(ctx, &list, client.InNamespace(job.Namespace))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == job.UID && e.Reason == reason && e.ReportingController == follow.ControllerName {
			out = append(out, e)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].EventTime.Before(&out[j-1].EventTime); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func notes(events []eventsv1.Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, e.Note)
	}
	return out
}

// explain is what `mpiguard explain NAMESPACE/JOB` prints.
func explain(ctx context.Context, job *trainer.TrainJob) string {
	GinkgoHelper()
	return explainAs(ctx, Default, env.Client, job)
}

// explainTo is explain inside an Eventually.
func explainTo(ctx context.Context, g Gomega, job *trainer.TrainJob) string {
	return explainAs(ctx, g, env.Client, job)
}

// explainAs is what `mpiguard explain NAMESPACE/JOB` prints to the user c
// reads as, judging with the embedded policies as the command does by
// default.
func explainAs(ctx context.Context, g Gomega, c client.Reader, job *trainer.TrainJob) string {
	judge, err := explainPipeline()
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	g.Expect(follow.Explain(ctx, c, judge, env.PolicyNamespace, client.ObjectKeyFromObject(job), &out)).To(Succeed())
	return out.String()
}

// explainPipeline is the pipeline explain judges with, built once: the
// policies compile in it.
var explainPipeline = sync.OnceValues(func() (*pipeline.Pipeline, error) {
	return pipeline.NewDefault(context.Background())
})

// occurrences counts what events tell: each once, or its series' count.
func occurrences(events []eventsv1.Event) int32 {
	var n int32
	for _, e := range events {
		n += max(1, ptrCount(e.Series))
	}
	return n
}

func ptrCount(s *eventsv1.EventSeries) int32 {
	if s == nil {
		return 0
	}
	return s.Count
}
