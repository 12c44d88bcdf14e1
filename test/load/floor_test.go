package load

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/test/framework"
)

// floorWebhook is BenchmarkSequentialCreate's floor: what the quota
// guarantee itself costs a create, with none of mpiguard's decisions. It
// serves the replicas' webhook address once they are stopped (the same TLS
// certificate, behind the same proxy, selected by the same webhook
// configurations) and answers every review allowed, the mutating ones
// without a patch; for a TrainJob's CREATE the validating answer first makes
// the two apiserver calls mpiguard's answer waits for: a live GET of the
// namespace's ResourceQuota and the write of its QuotaReservation with the
// job's entry added (shaped as mpiguard wrote them in the reserving run).
// Against the apiserver by itself, it is the least a create with a
// reservation can take on this machine (docs/performance.md).
type floorWebhook struct {
	c        client.Client
	policyNS string
	// template is a QuotaReservation the replicas wrote: its shapes and
	// first entry are copied into every object the floor writes.
	template *v1alpha1.QuotaReservation

	mu      sync.Mutex
	written map[string]*v1alpha1.QuotaReservation // by governed namespace
}

// startFloor stops nothing: call it once the replicas are stopped. It
// listens on the first replica's address and returns a function that stops
// the server.
func startFloor(ctx context.Context, b *testing.B, env *framework.Env, template *v1alpha1.QuotaReservation) func() {
	c, err := client.New(env.ManagerConfig, client.Options{Scheme: env.Client.Scheme()})
	must(b, err)
	f := &floorWebhook{c: c, policyNS: env.PolicyNamespace, template: template, written: map[string]*v1alpha1.QuotaReservation{}}
	dir := env.Testenv.WebhookInstallOptions.LocalServingCertDir
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	must(b, err)
	ln, err := net.Listen("tcp", env.Replicas[0].Addr)
	must(b, err)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(ctx, b, w, r) }),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	// The apiserver's idle connections led to the stopped replicas.
	env.Proxy.CloseConnections()
	return func() { _ = srv.Close() }
}

func (f *floorWebhook) serve(ctx context.Context, b *testing.B, w http.ResponseWriter, r *http.Request) {
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
	allowed := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	if strings.HasPrefix(r.URL.Path, "/validate-trainer-kubeflow-org") && req.Operation == admissionv1.Create {
		if err := f.reserve(ctx, req.Namespace, req.Name); err != nil {
			b.Errorf("floor: %s/%s: %v", req.Namespace, req.Name, err)
			allowed = &admissionv1.AdmissionResponse{UID: req.UID, Result: &metav1.Status{Message: err.Error()}}
		}
	}
	out, err := json.Marshal(&admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: allowed})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

// reserve reads the namespace's ResourceQuota live and writes its
// QuotaReservation with one more entry, named for job. The creates are
// sequential, so the object written last is the one to update.
func (f *floorWebhook) reserve(ctx context.Context, ns, job string) error {
	var q corev1.ResourceQuota
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gpus"}, &q); err != nil {
		return err
	}
	if len(f.template.Spec.Entries) == 0 {
		return errors.New("the template QuotaReservation has no entry")
	}
	entry := *f.template.Spec.Entries[0].DeepCopy()
	entry.TrainJob, entry.UID, entry.RequestUID = job, "", ""
	f.mu.Lock()
	defer f.mu.Unlock()
	res, ok := f.written[ns]
	if !ok {
		res = &v1alpha1.QuotaReservation{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.policyNS, Name: ns},
			Spec: v1alpha1.QuotaReservationSpec{
				Namespace: ns,
				PodShapes: f.template.Spec.PodShapes, ObjectShapes: f.template.Spec.ObjectShapes,
				Entries: []v1alpha1.ReservationEntry{entry},
			},
		}
		if err := f.c.Create(ctx, res); err != nil {
			return err
		}
		f.written[ns] = res
		return nil
	}
	res.Spec.Entries = append(res.Spec.Entries, entry)
	return f.c.Update(ctx, res)
}
