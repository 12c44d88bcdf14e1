// Package load measures the TrainJob webhooks over their real TLS endpoint:
// a real control plane and mpiguard manager (framework.Start), and a load
// generator that POSTs AdmissionReviews straight to the webhook server, as the
// apiserver does. It runs only as a benchmark (make bench), never in make test:
//
//	go test ./test/load -run '^$' -bench Webhook -benchtime 1x
package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	gojson "github.com/goccy/go-json"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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
	targetRate  = 2000
	maxInFlight = 64
	duration    = 10 * time.Second
	namespaces  = 8
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
	env, err := framework.Start(ctx, framework.Options{Name: "load"})
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
		// A quota the jobs fit, so every request takes the quota path (ledger, reservations).
		q := fixtures.ResourceQuota(ns.Name, "gpus", "requests.nvidia.com/gpu", "100000")
		must(b, env.Client.Create(ctx, q))
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
	httpClient := tlsClient(b, env)
	wh := env.Testenv.WebhookInstallOptions
	base := fmt.Sprintf("https://%s:%d", wh.LocalServingHost, wh.LocalServingPort)
	for _, sc := range scenarios {
		b.Run(sc.name, func(b *testing.B) {
			bodies := make([][]byte, len(nss))
			for i, ns := range nss {
				job := sc.job(ns)
				if sc.path == trainjob.ValidatePath {
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
				r := run(b, httpClient, base+sc.path, bodies)
				b.ReportMetric(r.throughput, "max-reviews/s")
				o := runOpenLoop(b, httpClient, base+sc.path, bodies)
				b.ReportMetric(o.throughput, "reviews/s@2000")
				b.ReportMetric(float64(o.p50.Microseconds()), "p50-µs@2000")
				b.ReportMetric(float64(o.p99.Microseconds()), "p99-µs@2000")
			}
		})
	}
}

type result struct {
	requests   int
	throughput float64
	p50, p99   time.Duration
}

// run sends reviews from `concurrency` workers for `duration` and checks every
// answer is a well-formed allowed AdmissionReview (a load test of errors
// would measure nothing).
func run(b *testing.B, c *http.Client, url string, bodies [][]byte) result {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		firstErr  atomic.Value
	)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 4096)
			for i := w; time.Now().Before(deadline); i++ {
				t0 := time.Now()
				err := post(c, url, bodies[i%len(bodies)])
				local = append(local, time.Since(t0))
				if err != nil {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failures.Load(); n > 0 {
		b.Fatalf("%d of %d reviews failed, first: %v", n, len(latencies), firstErr.Load())
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	return result{
		requests:   len(latencies),
		throughput: float64(len(latencies)) / elapsed.Seconds(),
		p50:        latencies[len(latencies)/2],
		p99:        latencies[len(latencies)*99/100],
	}
}

// runOpenLoop sends targetRate reviews per second for duration.
func runOpenLoop(b *testing.B, c *http.Client, url string, bodies [][]byte) result {
	total := int(targetRate * duration.Seconds())
	interval := time.Second / targetRate
	latencies := make([]time.Duration, total)
	var (
		failures atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, maxInFlight)
	start := time.Now()
	for i := range total {
		scheduled := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(scheduled))
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			err := post(c, url, bodies[i%len(bodies)])
			latencies[i] = time.Since(scheduled)
			if err != nil {
				failures.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failures.Load(); n > 0 {
		b.Fatalf("%d of %d reviews failed, first: %v", n, total, firstErr.Load())
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	return result{
		requests:   total,
		throughput: float64(total) / elapsed.Seconds(),
		p50:        latencies[total/2],
		p99:        latencies[total*99/100],
	}
}

func post(c *http.Client, url string, body []byte) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	// Only what the check needs is decoded, with goccy/go-json: the generator
	// shares the two cores with the server it measures.
	var out answer
	if err := gojson.Unmarshal(data, &out); err != nil {
		return fmt.Errorf("decoding the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if out.Kind != "AdmissionReview" || out.Response == nil || !out.Response.Allowed || out.Response.UID != "load" {
		return fmt.Errorf("not an allowed AdmissionReview for this request (HTTP %d): %s", resp.StatusCode, data)
	}
	return nil
}

// answer is the part of an AdmissionReview response the generator checks.
type answer struct {
	Kind     string `json:"kind"`
	Response *struct {
		UID     string `json:"uid"`
		Allowed bool   `json:"allowed"`
	} `json:"response"`
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
		},
	})
	must(b, err)
	return body
}

// tlsClient trusts the CA of envtest's webhook serving certificate, as the
// apiserver does through the webhook configuration's caBundle.
func tlsClient(b *testing.B, env *framework.Env) *http.Client {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(env.Testenv.WebhookInstallOptions.LocalServingCAData) {
		b.Fatal("no CA for the webhook server")
	}
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
			MaxIdleConnsPerHost: maxInFlight,
		},
	}
}

func must(b *testing.B, err error) {
	if err != nil {
		b.Helper()
		b.Fatal(err)
	}
}
