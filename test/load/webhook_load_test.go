// Package load measures the TrainJob webhooks over their real TLS endpoint:
// a real control plane and mpiguard manager (framework.Start), and a load
// generator in the same process that POSTs AdmissionReviews straight to the
// webhook server, as the apiserver does. It runs only as a benchmark (make
// bench), never in make test:
//
//	go test ./test/load -run '^$' -bench Webhook -benchtime 1x
//
// The generator shares the machine's cores with the server. It was also tried
// in a process of its own: on two cores the kernel then schedules two Go
// runtimes against each other, and the generator's own send lag reached a p99
// of 5-50 ms even for non-MPI reviews, so it stays in the server's process.
package load

import (
	"context"
	"encoding/json"
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/test/fixtures"
	"github.com/mpiguard/mpiguard/test/framework"
	"github.com/mpiguard/mpiguard/webhooks/trainjob"
)

const (
	// concurrency is the closed-loop run's number of workers, each sending the
	// next review when the last one is answered: it finds the maximum rate.
	concurrency = 32
	// targetRate is the open-loop run's rate: reviews are sent on schedule
	// whether or not earlier ones were answered (as the apiserver does), and
	// latency counts from the scheduled time, so a server that falls behind
	// shows it in p99 instead of slowing the generator down.
	// MPIGUARD_LOAD_RATE overrides it (make bench-webhook LOAD_RATE=...).
	targetRate  = 2000
	maxInFlight = 64
	duration    = 10 * time.Second
	namespaces  = 8
	// controlPath serves cpuControl when MPIGUARD_LOAD_CONTROL_US is set.
	controlPath = "/load-control"
)

type scenario struct {
	name string
	path string
	job  func(ns string) *trainer.TrainJob
}

func BenchmarkWebhookHTTPS(b *testing.B) {
	ctx := context.Background()
	// controller-runtime's own logs would only cost the server CPU here. The
	// decision log stays on (one JSON line per decision, as in production).
	ctrl.SetLogger(logr.Discard())
	// MPIGUARD_LOAD_HTTP2=true measures the server with HTTP/2 enabled
	// (mpiguard serve --enable-http2), which the generator then negotiates.
	http2 := os.Getenv("MPIGUARD_LOAD_HTTP2") == "true"
	env, err := framework.Start(ctx, framework.Options{Name: "load", EnableHTTP2: http2})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop(false) }()

	mpi := fixtures.MPIRuntime("load-mpi-4gpu").
		Resources("node", fixtures.ResourceList("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "4"), fixtures.ResourceList("nvidia.com/gpu", "4")).
		Resources("launcher", fixtures.ResourceList("cpu", "1", "memory", "2Gi"), nil).Cluster()
	torch := fixtures.TorchRuntime("load-torch").Cluster()
	var nss []string
	for _, obj := range []client.Object{mpi, torch} {
		must(b, env.Client.Create(ctx, obj))
	}
	for range namespaces {
		ns, err := env.NewNamespace(ctx, nil)
		must(b, err)
		// A quota the jobs fit, so every request takes the quota path (reservations).
		q := fixtures.ResourceQuota(ns.Name, "gpus", "requests.nvidia.com/gpu", "100000")
		must(b, env.Client.Create(ctx, q))
		// Synced as the quota controller (not running here) would: a quota
		// whose status does not count what its spec limits is not decided
		// against, and every MPI review would be told to retry.
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: fixtures.ResourceList("requests.nvidia.com/gpu", "0")}
		must(b, env.Client.Status().Update(ctx, q))
		nss = append(nss, ns.Name)
	}
	time.Sleep(time.Second) // let mpiguard's cache catch up

	scenarios := []scenario{
		{"validate-mpi-64-workers", trainjob.ValidatePath, func(ns string) *trainer.TrainJob {
			return fixtures.TrainJob(ns, "load", mpi.Name).NumNodes(64).ActiveDeadlineSeconds(86400).Obj()
		}},
		{"validate-mpi-4-workers", trainjob.ValidatePath, func(ns string) *trainer.TrainJob {
			return fixtures.TrainJob(ns, "load", mpi.Name).NumNodes(4).ActiveDeadlineSeconds(86400).Obj()
		}},
		{"mutate-mpi-4-workers", trainjob.MutatePath, func(ns string) *trainer.TrainJob {
			return fixtures.TrainJob(ns, "load", mpi.Name).NumNodes(4).ActiveDeadlineSeconds(86400).Obj()
		}},
		{"validate-non-mpi", trainjob.ValidatePath, func(ns string) *trainer.TrainJob {
			return fixtures.TrainJob(ns, "load", torch.Name).NumNodes(4).Obj()
		}},
	}
	if v := os.Getenv("MPIGUARD_LOAD_CONTROL_US"); v != "" {
		// Only the control: see cpuControl.
		us, err := strconv.Atoi(v)
		if err != nil || us < 0 {
			b.Fatalf("MPIGUARD_LOAD_CONTROL_US=%q: want microseconds of CPU per review", v)
		}
		garbage, _ := strconv.Atoi(os.Getenv("MPIGUARD_LOAD_CONTROL_BYTES"))
		env.Manager.GetWebhookServer().Register(controlPath, cpuControl(time.Duration(us)*time.Microsecond, garbage))
		scenarios = []scenario{{fmt.Sprintf("control-%dus-%dB", us, garbage), controlPath, scenarios[0].job}}
	}
	wh := env.Testenv.WebhookInstallOptions
	base := fmt.Sprintf("https://%s:%d", wh.LocalServingHost, wh.LocalServingPort)
	httpClient, err := tlsClient(wh.LocalServingCAData)
	must(b, err)
	wantProto := map[bool]string{false: "HTTP/1.1", true: "HTTP/2.0"}[http2]
	if proto, err := protocol(httpClient, base+trainjob.ValidatePath); err != nil || proto != wantProto {
		b.Fatalf("the generator speaks %q to the webhook server (err %v), want %s", proto, err, wantProto)
	}
	rate := targetRate
	if v := os.Getenv("MPIGUARD_LOAD_RATE"); v != "" {
		rate, err = strconv.Atoi(v)
		if err != nil || rate <= 0 {
			b.Fatalf("MPIGUARD_LOAD_RATE=%q: want a positive number of reviews per second", v)
		}
	}
	at := fmt.Sprintf("@%d", rate)
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			bodies := make([][]byte, len(nss))
			for i, ns := range nss {
				job := sc.job(ns)
				if sc.path != trainjob.MutatePath {
					// The validating webhook sees the job as the apiserver sends
					// it: defaulted and mutated by mpiguard's mutating webhook
					// (its runtime patch). A dry-run create returns exactly that.
					must(b, env.Client.Create(ctx, job, client.DryRunAll))
					if len(job.Spec.RuntimePatches) == 0 && sc.name != "validate-non-mpi" {
						b.Fatalf("%s: the dry-run create returned no runtime patch from the mutating webhook", sc.name)
					}
				}
				bodies[i] = review(b, job)
			}
			for range b.N {
				r, err := run(httpClient, base+sc.path, bodies)
				must(b, err)
				b.ReportMetric(r.Throughput, "max-reviews/s")
				before, err := snapshotHandlerLatencies(sc.path)
				must(b, err)
				o, err := runOpenLoop(httpClient, base+sc.path, bodies, rate)
				must(b, err)
				after, err := snapshotHandlerLatencies(sc.path)
				must(b, err)
				hp50, hp99 := after.quantilesSince(before)
				b.ReportMetric(float64(hp50.Microseconds()), "handler-p50-µs"+at)
				b.ReportMetric(float64(hp99.Microseconds()), "handler-p99-µs"+at)
				b.ReportMetric(o.Throughput, "reviews/s"+at)
				b.ReportMetric(float64(o.P50.Microseconds()), "p50-µs"+at)
				b.ReportMetric(float64(o.P99.Microseconds()), "p99-µs"+at)
				b.ReportMetric(float64(o.LagP99.Microseconds()), "send-lag-p99-µs"+at)
				b.ReportMetric(float64(o.AnswerP50.Microseconds()), "answer-p50-µs"+at)
				b.ReportMetric(float64(o.AnswerP99.Microseconds()), "answer-p99-µs"+at)
			}
		})
	}
}

func review(b *testing.B, job *trainer.TrainJob) []byte {
	// The apiserver's object says what it is; the client clears that on
	// objects it decodes.
	job = job.DeepCopy()
	job.SetGroupVersionKind(trainer.GroupVersion.WithKind(trainer.TrainJobKind))
	raw, err := json.Marshal(job)
	must(b, err)
	body, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("load"),
			Kind:      metav1.GroupVersionKind{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Kind: "TrainJob"},
			Resource:  metav1.GroupVersionResource{Group: trainer.GroupVersion.Group, Version: trainer.GroupVersion.Version, Resource: "trainjobs"},
			Name:      job.Name,
			Namespace: job.Namespace,
			Operation: admissionv1.Create,
			UserInfo:  authenticationv1.UserInfo{Username: "load-generator"},
			Object:    runtime.RawExtension{Raw: raw},
			// Dry runs: the decision path in full (live quota read included),
			// without a QuotaReservation write per review. The write's own
			// cost is measured through the apiserver (test/integration/replicas).
			DryRun: ptr.To(true),
		},
	})
	must(b, err)
	return body
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Helper()
		b.Fatal(err)
	}
}
