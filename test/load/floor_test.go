package load

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/reservations/admit"
	"github.com/mpiguard/mpiguard/test/framework"
)

// floorWebhook is the load benchmarks' floor: what the quota guarantee
// itself costs a create, with none of mpiguard's decisions. It serves the
// replicas' webhook address once they are stopped (the same TLS certificate,
// behind the same proxy, selected by the same webhook configurations) and
// answers every review allowed, the mutating ones without a patch, except a
// TrainJob's validating CREATE: that one joins its namespace's queue, whose
// requests are decided in batches exactly as mpiguard's Admitter batches
// them (admit.Queue: a namespace's batches in turn, each of the requests
// waiting when the last ended). A batch makes the two apiserver calls
// mpiguard's answer waits for: a live GET of the namespace's ResourceQuota
// "gpus", then, after deciding each request in arrival order against what
// it has left, one write of the namespace's QuotaReservation with an entry
// for every admitted job (shaped as mpiguard wrote them in the run before).
// It is exact as mpiguard is: each job charges charge GPUs, and a job that
// does not fit is denied with "[aggregate-quota]". Against the apiserver by
// itself, it is the least a create with a reservation can take on this
// machine (docs/performance.md).
type floorWebhook struct {
	ctx      context.Context
	c        client.Client
	policyNS string
	// template is a QuotaReservation the replicas wrote: its shapes and
	// first entry are copied into every object the floor writes.
	template *v1alpha1.QuotaReservation
	// charge is the GPUs every job of the benchmark asks for.
	charge resource.Quantity
	queue  *admit.Queue[*floorRequest]

	mu sync.Mutex
	// written is what the floor last wrote, by governed namespace; only
	// the namespace's batch (one at a time) reads and writes its object.
	written map[string]*v1alpha1.QuotaReservation
}

// floorRequest is one validating CREATE waiting for its batch.
type floorRequest struct {
	job  string
	done chan floorAnswer
}

// floorAnswer is a batch's answer to one request: admitted, denied (with
// denial saying why) or failed (err).
type floorAnswer struct {
	denial string
	err    error
}

// startFloor stops nothing: call it once the replicas are stopped. It
// listens on the first replica's address and returns a function that stops
// the server. Every job the benchmark submits asks for charge GPUs.
func startFloor(ctx context.Context, b *testing.B, env *framework.Env, template *v1alpha1.QuotaReservation, charge int64) func() {
	if len(template.Spec.Entries) == 0 {
		b.Fatal("floor: the template QuotaReservation has no entry")
	}
	c, err := client.New(env.ManagerConfig, client.Options{Scheme: env.Client.Scheme()})
	must(b, err)
	f := &floorWebhook{ctx: ctx, c: c, policyNS: env.PolicyNamespace, template: template,
		charge: *resource.NewQuantity(charge, resource.DecimalSI), written: map[string]*v1alpha1.QuotaReservation{}}
	f.queue = admit.NewQueue(f.decide)
	dir := env.Testenv.WebhookInstallOptions.LocalServingCertDir
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	must(b, err)
	ln, err := net.Listen("tcp", env.Replicas[0].Addr)
	must(b, err)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(b, w, r) }),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	// The apiserver's idle connections led to the stopped replicas.
	env.Proxy.CloseConnections()
	return func() { _ = srv.Close() }
}

func (f *floorWebhook) serve(b *testing.B, w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("floor: decoding the review: %v", err), http.StatusBadRequest)
		return
	}
	req := review.Request
	answer := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if strings.HasPrefix(r.URL.Path, "/validate-trainer-kubeflow-org") && req.Operation == admissionv1.Create {
		d := &floorRequest{job: req.Name, done: make(chan floorAnswer, 1)}
		f.queue.Add(req.Namespace, d)
		var got floorAnswer
		select {
		case got = <-d.done:
		case <-r.Context().Done():
			got.err = r.Context().Err()
		}
		switch {
		case got.err != nil:
			b.Errorf("floor: %s/%s: %v", req.Namespace, req.Name, got.err)
			answer = &admissionv1.AdmissionResponse{UID: req.UID, Result: &metav1.Status{Message: got.err.Error()}}
		case got.denial != "":
			answer = &admissionv1.AdmissionResponse{UID: req.UID, Result: &metav1.Status{Code: http.StatusForbidden, Message: got.denial}}
		}
	}
	out, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: answer})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// gpuQuota is the resource every floor decision charges.
const gpuQuota = corev1.ResourceName("requests.nvidia.com/gpu")

// decide is one batch of namespace ns: one live read of its ResourceQuota,
// each request admitted while the quota has charge left beside what the
// floor's entries and the quota's status hold, one write of every admitted
// request's entry, then the answers.
func (f *floorWebhook) decide(ns string, batch []*floorRequest) {
	answer := func(ds []*floorRequest, a floorAnswer) {
		for _, d := range ds {
			d.done <- a
		}
	}
	var q corev1.ResourceQuota
	if err := f.c.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: "gpus"}, &q); err != nil {
		answer(batch, floorAnswer{err: err})
		return
	}
	f.mu.Lock()
	res := f.written[ns]
	f.mu.Unlock()
	held := 0
	if res != nil {
		held = len(res.Spec.Entries)
	}
	left := q.Status.Hard[gpuQuota].DeepCopy()
	left.Sub(q.Status.Used[gpuQuota])
	for range held {
		left.Sub(f.charge)
	}
	var admitted, denied []*floorRequest
	var entries []v1alpha1.ReservationEntry
	for _, d := range batch {
		if left.Cmp(f.charge) < 0 {
			denied = append(denied, d)
			continue
		}
		left.Sub(f.charge)
		entry := *f.template.Spec.Entries[0].DeepCopy()
		entry.TrainJob, entry.UID, entry.RequestUID = d.job, "", ""
		entries = append(entries, entry)
		admitted = append(admitted, d)
	}
	if len(entries) > 0 {
		written, err := f.write(ns, res, entries)
		if err != nil {
			answer(admitted, floorAnswer{err: err})
		} else {
			f.mu.Lock()
			f.written[ns] = written
			f.mu.Unlock()
			answer(admitted, floorAnswer{})
		}
	}
	answer(denied, floorAnswer{denial: fmt.Sprintf("[aggregate-quota] floor: the quota %s/gpus has less than %s %s left", ns, f.charge.String(), gpuQuota)})
}

// write creates namespace ns's QuotaReservation with entries (res nil) or
// updates res, the object last written, with entries added (a failed write
// fails the benchmark, so res need not survive it).
func (f *floorWebhook) write(ns string, res *v1alpha1.QuotaReservation, entries []v1alpha1.ReservationEntry) (*v1alpha1.QuotaReservation, error) {
	if res == nil {
		res = &v1alpha1.QuotaReservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.policyNS, Name: ns},
			Spec: v1alpha1.QuotaReservationSpec{
				Namespace: ns,
				PodShapes: f.template.Spec.PodShapes, ObjectShapes: f.template.Spec.ObjectShapes,
				Entries: entries,
			},
		}
		return res, f.c.Create(f.ctx, res)
	}
	res.Spec.Entries = append(res.Spec.Entries, entries...)
	return res, f.c.Update(f.ctx, res)
}
