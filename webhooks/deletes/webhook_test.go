package deletes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/engine"
)

type entries map[string]*v1alpha1.ReservationEntry

func (e entries) Entry(_ context.Context, job *trainer.TrainJob) (*v1alpha1.ReservationEntry, error) {
	if job.Name == "unreadable" {
		return nil, errors.New("cache not synced")
	}
	return e[job.Namespace+"/"+job.Name], nil
}

func deleteRequest(t *testing.T, kind, ns, name string, old any, dryRun bool) admission.Request {
	t.Helper()
	raw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Delete, Kind: metav1.GroupVersionKind{Group: trainer.GroupVersion.Group, Version: "v1alpha1", Kind: kind},
		Namespace: ns, Name: name, UserInfo: authenticationv1.UserInfo{Username: "alice"}, DryRun: ptr.To(dryRun),
		OldObject: runtime.RawExtension{Raw: raw},
	}}
}

func TestDeletionsOnRecord(t *testing.T) {
	ctx := context.Background()
	var log bytes.Buffer
	eng, err := engine.NewDefault(ctx, engine.Options{DecisionLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	held := &v1alpha1.ReservationEntry{TrainJob: "running", UID: "u1", Operation: "CREATE"}
	o := &Observer{Log: eng, Reservations: entries{"team-a/running": held}}
	job := func(name string, mod func(*trainer.TrainJob)) *trainer.TrainJob {
		j := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: "u1"}}
		if mod != nil {
			mod(j)
		}
		return j
	}
	failed := func(j *trainer.TrainJob) {
		j.Status.Conditions = []metav1.Condition{{Type: trainer.TrainJobFailed, Status: metav1.ConditionTrue}}
	}
	tests := []struct {
		name       string
		req        admission.Request
		want       map[string]any
		annotation map[string]string
	}{
		{"a running job with its reservation", deleteRequest(t, "TrainJob", "team-a", "running", job("running", nil), false),
			map[string]any{"kind": "TrainJob", "namespace": "team-a", "trainJob": "running", "operation": "DELETE", "user": "alice", "allowed": true, "phase": "Running",
				"reservation": map[string]any{"trainJob": "running", "uid": "u1", "operation": "CREATE", "admittedAt": nil, "holdUntil": nil}},
			map[string]string{"verdict": "allowed", "recorded": "true", "phase": "Running", "reservation": "held"}},
		{"a failed job, dry run", deleteRequest(t, "TrainJob", "team-a", "done", job("done", failed), true),
			map[string]any{"kind": "TrainJob", "namespace": "team-a", "trainJob": "done", "operation": "DELETE", "user": "alice", "allowed": true, "phase": "Failed", "dryRunRequest": true},
			map[string]string{"verdict": "allowed", "recorded": "true", "phase": "Failed", "reservation": "none"}},
		{"a suspended job whose reservation cannot be read", deleteRequest(t, "TrainJob", "team-a", "unreadable", job("unreadable", func(j *trainer.TrainJob) { j.Spec.Suspend = ptr.To(true) }), false),
			map[string]any{"kind": "TrainJob", "namespace": "team-a", "trainJob": "unreadable", "operation": "DELETE", "user": "alice", "allowed": true, "phase": "Suspended"},
			map[string]string{"verdict": "allowed", "recorded": "true", "phase": "Suspended", "reservation": "none"}},
		{"a ClusterTrainingRuntime", deleteRequest(t, "ClusterTrainingRuntime", "", "mpi-openmpi", map[string]any{"metadata": map[string]any{"name": "mpi-openmpi"}}, false),
			map[string]any{"kind": "ClusterTrainingRuntime", "namespace": "", "runtime": "mpi-openmpi", "operation": "DELETE", "user": "alice", "allowed": true},
			map[string]string{"verdict": "allowed", "recorded": "true"}},
		{"an undecodable TrainJob is still allowed and recorded", deleteRequest(t, "TrainJob", "team-a", "odd", map[string]any{"spec": 3}, false),
			map[string]any{"kind": "TrainJob", "namespace": "team-a", "trainJob": "odd", "operation": "DELETE", "user": "alice", "allowed": true},
			map[string]string{"verdict": "allowed", "recorded": "true", "reservation": "none"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log.Reset()
			resp := o.Handle(ctx, tc.req)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			if diff := cmp.Diff(tc.annotation, resp.AuditAnnotations); diff != "" {
				t.Errorf("audit annotations (-want +got):\n%s", diff)
			}
			var got map[string]any
			if err := json.Unmarshal(log.Bytes(), &got); err != nil {
				t.Fatalf("decision log %q: %v", log.String(), err)
			}
			for _, k := range []string{"time", "latencySeconds", "violations", "policySetVersion"} {
				if _, ok := got[k]; !ok {
					t.Errorf("no %q in %s", k, log.String())
				}
				delete(got, k)
			}
			if r, ok := got["reservation"].(map[string]any); ok { // times are the zero time
				r["admittedAt"], r["holdUntil"] = nil, nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision log entry (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOtherOperationsAreNotRecorded(t *testing.T) {
	var log bytes.Buffer
	eng, err := engine.NewDefault(context.Background(), engine.Options{DecisionLog: &log})
	if err != nil {
		t.Fatal(err)
	}
	req := deleteRequest(t, "TrainJob", "team-a", "x", map[string]any{}, false)
	req.Operation = admissionv1.Create
	if resp := (&Observer{Log: eng}).Handle(context.Background(), req); !resp.Allowed || log.Len() != 0 {
		t.Errorf("a CREATE: allowed %v, logged %q", resp.Allowed, log.String())
	}
}

func TestDenialsOnlyVerbosityLeavesDeletionsOut(t *testing.T) {
	var log bytes.Buffer
	eng, err := engine.NewDefault(context.Background(), engine.Options{DecisionLog: &log, DecisionLogVerbosity: engine.LogDenials})
	if err != nil {
		t.Fatal(err)
	}
	if resp := (&Observer{Log: eng}).Handle(context.Background(), deleteRequest(t, "TrainJob", "team-a", "x", map[string]any{}, false)); !resp.Allowed || log.Len() != 0 {
		t.Errorf("allowed %v, logged %q", resp.Allowed, log.String())
	}
}
