package follow

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app"
	"github.com/mpiguard/mpiguard/internal/diagnosis"
	"github.com/mpiguard/mpiguard/internal/pipeline"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
)

// interval is the follower's default --follow-interval.
const interval = 30 * time.Second

// within is how soon after the state arises its Event must be there.
const within = 35 * time.Second

// podName is the pod an Event names: "Worker 0 (pod oom-node-0-0-x7k2q)".
var podName = regexp.MustCompile(`\(pod ([a-z0-9.-]+)\)`)

// podsOf are the job's pods of a replicated job ("launcher", "node").
func podsOf(ctx context.Context, g Gomega, ns, job, replicatedJob string) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{
		jobsetv1alpha2.JobSetNameKey: job, jobsetv1alpha2.ReplicatedJobNameKey: replicatedJob})).To(Succeed())
	return pods.Items
}

var _ = Describe("the job follower", func() {
	It("tells why Workers cannot be scheduled within 35 s, no more often than every 30 s, and stops once the pods run", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		runtime(ctx, ns, "keep-running", nil, nil)
		// A Launcher and 6 Workers of 8 GPUs on 4 nodes of 8: 2 Workers wait.
		job := submit(ctx, ns, "big", "keep-running", 6, 8)
		created := time.Now()

		var first []string
		Eventually(func(g Gomega) {
			first = notes(followEvents(ctx, g, job, diagnosis.ReasonUnschedulable))
			g.Expect(first).NotTo(BeEmpty())
		}, within, time.Second).Should(Succeed(), "an Unschedulable Event within %s", within)
		Expect(time.Since(created)).To(BeNumerically("<", within))
		Expect(first[0]).To(And(
			MatchRegexp(`^2 of 6 Workers unschedulable \(Worker \d, \d\): 0/4 nodes are available: 4 Insufficient nvidia.com/gpu\. `),
			ContainSubstring("see docs/troubleshooting.md#unschedulable")))

		By("`mpiguard explain` gives the same reason")
		out := explain(ctx, job)
		Expect(out).To(ContainSubstring("Warning Unschedulable: " + first[0]))
		Expect(out).To(MatchRegexp(`Worker \d \(pod big-node-0-\d-\w+\)\s+Pending, unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu`))

		By("the same state is told again after 30 s, not sooner: one Event, its series counts the repeats")
		Eventually(func(g Gomega) {
			g.Expect(occurrences(followEvents(ctx, g, job, diagnosis.ReasonUnschedulable))).To(BeNumerically(">=", 2))
		}, interval+within).Should(Succeed())
		events := followEvents(ctx, Default, job, diagnosis.ReasonUnschedulable)
		Expect(events).To(HaveLen(1), "the same note is one Event")
		e := events[0]
		span := e.Series.LastObservedTime.Sub(e.EventTime.Time)
		Expect(span).To(BeNumerically(">=", time.Duration(e.Series.Count-1)*(interval-time.Second)),
			"%d occurrences over %s: more often than every %s", e.Series.Count, span, interval)

		By("room for the Workers: once every pod runs, nothing more is told")
		// The Launcher asks 8 GPUs too (runLauncherAsNode): 3 more nodes hold
		// the 2 Workers and the Launcher.
		Expect(env.AddKWOKNodes(ctx, "kwok-extra-", 3, 8)).To(Succeed())
		Eventually(func(g Gomega) {
			pods := append(podsOf(ctx, g, ns, job.Name, "node"), podsOf(ctx, g, ns, job.Name, "launcher")...)
			g.Expect(pods).To(HaveLen(7))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
		}, 2*time.Minute).Should(Succeed())
		told := occurrences(followEvents(ctx, Default, job, diagnosis.ReasonUnschedulable))
		Consistently(func(g Gomega) {
			g.Expect(occurrences(followEvents(ctx, g, job, diagnosis.ReasonUnschedulable))).To(Equal(told))
		}, within, time.Second).Should(Succeed(), "no Unschedulable Event once the pods run")
		Expect(explain(ctx, job)).To(ContainSubstring("none: every Launcher and Worker pod runs"))
	})

	It("tells that a quota keeps the Job controller from creating the Launcher's pod", func(ctx context.Context) {
		// Exempt: mpiguard's own admission would refuse the job for the quota
		// it lacks; the follower explains every MPI TrainJob.
		ns := env.Namespace(ctx, map[string]string{pipeline.ExemptLabel: "true"})
		Expect(env.Client.Create(ctx, fixtures.ResourceQuota(ns, "pods", "pods", "1"))).To(Succeed())
		runtime(ctx, ns, "keep-running", nil, nil)
		job := submit(ctx, ns, "quota", "keep-running", 1, 0)

		var got []string
		Eventually(func(g Gomega) {
			got = notes(followEvents(ctx, g, job, diagnosis.ReasonJobsNotCreated))
			g.Expect(got).NotTo(BeEmpty())
		}, 2*time.Minute, time.Second).Should(Succeed())
		Expect(got[0]).To(And(
			MatchRegexp(`^the job's pods are not created: Job quota-launcher-0 cannot create its pods \(FailedCreate.*exceeded quota: pods`),
			ContainSubstring("A ResourceQuota in namespace "+ns+" has no room for them"),
			ContainSubstring("see docs/troubleshooting.md#jobs-not-created")))
		Expect(explain(ctx, job)).To(ContainSubstring("Warning JobsNotCreated: the job's pods are not created: Job quota-launcher-0 cannot create its pods"))
	})

	DescribeTable("names the failed pod by role and index, and why, once",
		func(ctx context.Context, name string, launcher, workers map[string]string, reason string, want func(pod string) string) {
			ns := env.Namespace(ctx, nil)
			runtime(ctx, ns, "outcome", launcher, workers)
			job := submit(ctx, ns, name, "outcome", 1, 0)
			created := time.Now()

			var pod string
			Eventually(func(g Gomega) {
				told := notes(followEvents(ctx, g, job, reason))
				g.Expect(told).NotTo(BeEmpty())
				m := podName.FindStringSubmatch(told[0])
				g.Expect(m).NotTo(BeNil(), "no pod named in %q", told[0])
				pod = m[1]
				g.Expect(told[0]).To(ContainSubstring(want(pod)))
				g.Expect(told[0]).To(ContainSubstring("see " + diagnosis.Anchor(reason)))
				By("`mpiguard explain` gives the same reason")
				g.Expect(explainTo(ctx, g, job)).To(ContainSubstring(want(pod)))
			}, 2*time.Minute, time.Second).Should(Succeed())
			GinkgoWriter.Printf("%s told %s after the job's creation\n", reason, time.Since(created))

			By("once: not again while the job goes on")
			Consistently(func(g Gomega) {
				n := 0
				for _, e := range notes(followEvents(ctx, g, job, reason)) {
					if strings.Contains(e, "(pod "+pod+")") {
						n++
					}
				}
				g.Expect(n).To(Equal(1))
			}, 10*time.Second, time.Second).Should(Succeed())
		},
		Entry("a Worker OOMKilled", "oom", nil,
			map[string]string{exitCode: "137", exitReason: "OOMKilled", terminationMessage: ""},
			diagnosis.ReasonOOMKilled,
			func(pod string) string {
				return fmt.Sprintf("Worker 0 (pod %s) was OOMKilled: limit 64Gi (container node, exit code 137)", pod)
			}),
		Entry("the Launcher cannot reach a Worker over SSH", "ssh",
			map[string]string{exitCode: "1", exitReason: "Error", terminationMessage: "ssh: connect to host ssh-node-0-0.ssh port 2222: Connection refused\n--------------------------------------------------------------------------\nORTE was unable to reliably start one or more daemons."},
			nil, diagnosis.ReasonLauncherSSHFailed,
			func(pod string) string {
				return fmt.Sprintf("the Launcher cannot reach Worker 0 over SSH: Launcher (pod %s) (container node exited with code 1 (Error): `ssh: connect to host ssh-node-0-0.ssh port 2222: Connection refused`); the job's NetworkPolicy template is `", pod)
			}),
		Entry("a Worker's image cannot be pulled", "pull", nil,
			map[string]string{imagePullFailure: "true", noReady: "0"},
			diagnosis.ReasonImagePullFailed,
			func(pod string) string {
				return fmt.Sprintf("Worker 0 (pod %s) cannot pull image docker.io/mpioperator/openmpi:v0.6.0 for container node: ImagePullBackOff", pod)
			}),
	)

	It("warns once, across a restart of mpiguard, when a running job passes 80% of its maximum duration", func(ctx context.Context) {
		ns := env.Namespace(ctx, nil)
		runtime(ctx, ns, "keep-running", nil, nil)
		// 120 s: the Warning is due 96 s after the Trainer starts counting
		// (the job's creation), the deadline 24 s later.
		const deadline = 120
		job := fixtures.TrainJob(ns, "near", "keep-running").NamespacedRuntime().NumNodes(2).Limits("memory", "64Gi").ActiveDeadlineSeconds(deadline).Obj()
		Expect(env.Client.Create(ctx, job)).To(Succeed())
		due := job.CreationTimestamp.Add(96 * time.Second)

		var told []eventsv1.Event
		Eventually(func(g Gomega) {
			told = followEvents(ctx, g, job, diagnosis.ReasonDeadlineNear)
			g.Expect(told).NotTo(BeEmpty())
		}, time.Until(due)+within, time.Second).Should(Succeed(), "a DeadlineNear Event within %s of 80%% of the deadline", within)
		Expect(told).To(HaveLen(1))
		Expect(told[0].EventTime.Time).To(BeTemporally(">=", due.Truncate(time.Second)), "told before 80%% of the deadline had passed")
		Expect(told[0].Type).To(Equal(corev1.EventTypeWarning))
		Expect(told[0].Note).To(And(
			HavePrefix(fmt.Sprintf("the TrainJob has run 1m36s, 80%% of its maximum duration 2m0s (spec.activeDeadlineSeconds %d, counted from its start or last resume at %s): at %s the Trainer stops its Launcher and Workers and fails it with DeadlineExceeded. ",
				deadline, job.CreationTimestamp.UTC().Format(time.RFC3339), job.CreationTimestamp.Add(deadline*time.Second).UTC().Format(time.RFC3339))),
			ContainSubstring("Write a checkpoint now"),
			HaveSuffix("see docs/troubleshooting.md#deadline-near")))
		Expect(explain(ctx, job)).To(And(
			MatchRegexp(`Deadline:\s+1m\d+s of 2m0s used \(\d+%\); the Trainer stops it at \S+; past the 80% Warning \(DeadlineNear\)`),
			ContainSubstring("Warning DeadlineNear: the TrainJob has run 1m36s, 80% of its maximum duration 2m0s")), "explain gives the follower's Warning")

		By("a new mpiguard process (as a new leader) reads the Event and does not repeat it")
		Expect(env.RestartManagers(ctx, app.DefaultOptions())).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(job.Status.Conditions, "Failed")).To(BeTrue())
		}, time.Minute, time.Second).Should(Succeed(), "the Trainer fails the job at its deadline")
		Eventually(func(g Gomega) {
			g.Expect(followEvents(ctx, g, job, diagnosis.ReasonDeadlineExceeded)).NotTo(BeEmpty())
		}, within, time.Second).Should(Succeed(), "the restarted follower follows the job")
		Expect(followEvents(ctx, Default, job, diagnosis.ReasonDeadlineNear)).To(HaveLen(1), "the Warning is given once")
	})

	It("serves the job metrics the alerts and dashboard read, once a job ran and ended", func(ctx context.Context) {
		read, err := framework.MonitoredMetrics()
		Expect(err).NotTo(HaveOccurred())
		token := env.MetricsReaderToken(ctx)
		ns := env.Namespace(ctx, nil)
		// KWOK's pod-complete ends the pods 5 s after they run: the
		// follower sees them run first.
		completes := map[string]string{keepRunning: "", noComplete: "1", "pod-complete.stage.kwok.x-k8s.io/delay": "5s", "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "5s"}
		runtime(ctx, ns, "completes", completes, completes)
		job := submit(ctx, ns, "done", "completes", 1, 1)
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(job.Status.Conditions, "Complete")).To(BeTrue())
		}, 2*time.Minute, time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			served := env.ScrapeMetricNames(ctx, g, token)
			var missing []string
			for name, readers := range read {
				if framework.ServedByFollower(name) && !served[name] {
					missing = append(missing, fmt.Sprintf("%s (read by %s)", name, strings.Join(readers, ", ")))
				}
			}
			g.Expect(missing).To(BeEmpty(), "read by an alert or panel, not served")
		}, time.Minute, time.Second).Should(Succeed())
	})
})
