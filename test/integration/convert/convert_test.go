package convert

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/check"
	"github.com/mpiguard/mpiguard/internal/convert"
	"github.com/mpiguard/mpiguard/internal/engine"
	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/runtimes/catalog"
	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/fixtures/mpioperator"
	"github.com/mpiguard/mpiguard/test/framework"
)

// The cases of internal/convert's tests, with the gang scheduler each was
// written for.
var cases = []struct{ file, gang string }{
	{"upstream/pi.yaml", convert.GangNone},
	{"upstream/tensorflow-benchmarks.yaml", convert.GangNone},
	{"upstream/tensorflow-mnist.yaml", convert.GangNone},
	{"edge/cpu-only.yaml", convert.GangNone},
	{"edge/multi-gpu.yaml", convert.GangNone},
	{"edge/suspended-queue.yaml", convert.GangVolcano},
	{"edge/curated-fit.yaml", convert.GangNone},
}

// convertCase reads and converts one case into namespace ns.
func convertCase(file, gang, ns string) (convert.Document, *convert.Result) {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "internal", "convert", "testdata", file))
	Expect(err).NotTo(HaveOccurred())
	docs, err := convert.Read(file, bytes.NewReader(data))
	Expect(err).NotTo(HaveOccurred())
	Expect(docs).To(HaveLen(1))
	docs[0].Job.Metadata.Namespace = ns
	curated, err := catalog.Load()
	Expect(err).NotTo(HaveOccurred())
	res, err := convert.Convert(docs[0].Job, docs[0].Unknown, convert.Options{Gang: gang, Curated: curated})
	Expect(err).NotTo(HaveOccurred())
	return docs[0], res
}

// offlineVerdict judges the converted documents as `mpiguard convert` does
// (internal/check, the embedded policies, the curated runtimes).
func offlineVerdict(ctx context.Context, source string, res *convert.Result) check.Result {
	GinkgoHelper()
	var buf bytes.Buffer
	Expect(convert.WriteYAML(&buf, source, res)).To(Succeed())
	curated, err := catalog.Load()
	Expect(err).NotTo(HaveOccurred())
	set, err := engine.DefaultPolicySet()
	Expect(err).NotTo(HaveOccurred())
	eng, err := engine.New(ctx, set, engine.Options{})
	Expect(err).NotTo(HaveOccurred())
	rnd, err := render.NewRenderer(ctx)
	Expect(err).NotTo(HaveOccurred())
	ev := &check.Evaluator{Engine: eng, Renderer: rnd, User: "convert-suite"}
	results, err := convert.Judge(ctx, ev, check.NewCluster(), buf.Bytes(), curated)
	Expect(err).NotTo(HaveOccurred())
	Expect(results).To(HaveLen(1))
	return results[0]
}

// prerequisites creates what the case's pods name and its gang needs.
func prerequisites(ctx context.Context, job *convert.MPIJob) {
	GinkgoHelper()
	sp := job.Spec.RunPolicy.SchedulingPolicy
	if sp == nil {
		return
	}
	if sp.PriorityClass != "" {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: sp.PriorityClass}, Value: 1000}
		if err := env.Client.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
	if sp.Queue != "" {
		q := &volcanov1beta1.Queue{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: sp.Queue}, q); apierrors.IsNotFound(err) {
			env.CreateVolcanoQueue(ctx, fixtures.VolcanoQueue(sp.Queue, volcanov1beta1.QueueStateOpen, "", "0"))
		}
	}
}

var _ = Describe("mpiguard convert", func() {
	for _, tc := range cases {
		It("converts "+tc.file+" into documents the apiserver accepts, mpiguard decides as convert said, and the Trainer builds as the MPI Operator would", func(ctx context.Context) {
			governed := env.Namespace(ctx, nil)
			doc, res := convertCase(tc.file, tc.gang, governed)
			prerequisites(ctx, doc.Job)

			By("server-side dry run of the TrainingRuntime, then the TrainJob, in a governed namespace")
			if res.Runtime != nil {
				Expect(env.Client.Create(ctx, res.Runtime.DeepCopy(), client.DryRunAll)).To(Succeed())
				Expect(env.Client.Create(ctx, res.Runtime.DeepCopy())).To(Succeed())
			} else {
				// A curated runtime fits: mpiguard publishes it.
				Eventually(func() error {
					return env.Client.Get(ctx, client.ObjectKey{Name: res.TrainJob.Spec.RuntimeRef.Name}, &trainer.ClusterTrainingRuntime{})
				}).Should(Succeed())
			}
			verdict := offlineVerdict(ctx, tc.file, res)
			Expect(verdict.Error).To(BeEmpty())
			err := env.Client.Create(ctx, res.TrainJob.DeepCopy(), client.DryRunAll)
			if verdict.Allowed {
				Expect(err).NotTo(HaveOccurred(), "convert judged it admitted; the apiserver and mpiguard's webhooks refused it")
			} else {
				Expect(apierrors.IsForbidden(err)).To(BeTrue(), "convert judged it denied (%v); the apiserver said %v", verdict.Violations, err)
				for _, v := range verdict.Violations {
					Expect(err.Error()).To(ContainSubstring(v.Message))
				}
			}

			By("the Trainer's JobSet, in a namespace mpiguard does not govern (a denied job is built too)")
			free := env.Namespace(ctx, map[string]string{"mpiguard.io/exempt": "true"})
			_, res = convertCase(tc.file, tc.gang, free)
			if res.Runtime != nil {
				Expect(env.Client.Create(ctx, res.Runtime)).To(Succeed())
			}
			Expect(env.Client.Create(ctx, res.TrainJob)).To(Succeed())
			var js jobsetv1alpha2.JobSet
			Eventually(func() error {
				return env.Client.Get(ctx, client.ObjectKey{Namespace: free, Name: res.TrainJob.Name}, &js)
			}).Should(Succeed(), "the Trainer built no JobSet for TrainJob %s", res.TrainJob.Name)
			want := mpioperator.Pods(doc.Job, tc.gang)
			got := mpioperator.Job{Slots: want.Slots}
			for _, rj := range js.Spec.ReplicatedJobs {
				pods := rj.Replicas * ptr.Deref(rj.Template.Spec.Parallelism, 1)
				switch rj.Name {
				case constants.Launcher:
					got.Launchers, got.Launcher = pods, mpioperator.PodOf(rj.Template.Spec.Template.Spec)
				case constants.Node:
					got.Workers, got.Worker = pods, mpioperator.PodOf(rj.Template.Spec.Template.Spec)
				}
			}
			var hostfile corev1.ConfigMap
			Eventually(func() error {
				return env.Client.Get(ctx, client.ObjectKey{Namespace: free, Name: res.TrainJob.Name + constants.MPIHostfileConfigMapSuffix}, &hostfile)
			}).Should(Succeed())
			lines := strings.Split(strings.TrimSpace(hostfile.Data[constants.MPIHostfileName]), "\n")
			got.HostfileLines = int32(len(lines))
			for _, l := range lines {
				Expect(l).To(HaveSuffix(fmt.Sprintf(" slots=%d", want.Slots)))
			}
			if res.Runtime == nil {
				// The curated runtimes leave the pods' restart policy to JobSet.
				want.Launcher.RestartPolicy, want.Worker.RestartPolicy = "", ""
				got.Launcher.RestartPolicy, got.Worker.RestartPolicy = "", ""
			}
			Expect(cmp.Diff(want, got, cmpopts.EquateEmpty())).To(BeEmpty(), "the Trainer built (+) what the MPI Operator v0.6.0 does not (-)")
			Expect(ptr.Deref(js.Spec.Suspend, false)).To(Equal(ptr.Deref(doc.Job.Spec.RunPolicy.Suspend, false)), "suspend")
		})
	}
})
