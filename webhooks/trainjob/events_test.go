package trainjob

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/mpiguard/mpiguard/internal/render"
	"github.com/mpiguard/mpiguard/test/fixtures"
)

// recordedEvent is what a recorder was asked to write.
type recordedEvent struct {
	Regarding, Type, Reason, Action, Note string
}

// eventsSeen is an events.EventRecorder that keeps what it is given.
type eventsSeen struct {
	mu   sync.Mutex
	list []recordedEvent
}

var _ events.EventRecorder = (*eventsSeen)(nil)

func (e *eventsSeen) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	o := regarding.(client.Object)
	e.list = append(e.list, recordedEvent{o.GetNamespace() + "/" + o.GetName(), eventtype, reason, action, fmt.Sprintf(note, args...)})
}

// TestDeniedUpdatesLeaveAnEvent: a refused UPDATE (not a dry run) leaves one
// Warning event on the TrainJob with the answer's message, naming what was
// refused and who asked; nothing else leaves one.
func TestDeniedUpdatesLeaveAnEvent(t *testing.T) {
	rt := fixtures.MPIRuntime("openmpi").Cluster()
	if err := render.ApplyDefaults(rt); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
	stored := fixtures.TrainJob("team-a", "run", "openmpi").NumNodes(1).ActiveDeadlineSeconds(3600).Obj()
	stored.UID, stored.ResourceVersion = "uid-1", "7"
	// Another manager's runtime patch opting the Workers into the Istio mesh:
	// istio-opt-out denies it.
	optIn := stored.DeepCopy()
	optIn.Spec.RuntimePatches = append(optIn.Spec.RuntimePatches, trainer.RuntimePatch{
		Manager: "example.com/mesh",
		TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: &trainer.JobSetTemplatePatch{Spec: &trainer.JobSetSpecPatch{
			ReplicatedJobs: []trainer.ReplicatedJobPatch{{Name: "node", Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{
				Template: &trainer.PodTemplatePatch{Metadata: &metav1.ObjectMeta{Labels: map[string]string{"sidecar.istio.io/inject": "true"}}},
			}}}},
		}}},
	})
	// Created suspended: a create that starts nothing is decided without quota.
	suspendedOptIn := optIn.DeepCopy()
	suspendedOptIn.Spec.Suspend = ptr.To(true)
	allowed := stored.DeepCopy()
	allowed.Labels = map[string]string{"team": "vision"}
	allowed.Spec.Trainer.NumProcPerNode = ptr.To[int32](1)
	gone := stored.DeepCopy()
	gone.Spec.RuntimeRef.Name = "missing"
	// A job MultiKueue runs on a worker cluster, resumed by Kueue on the
	// manager: it starts no pod here, and its refusal is still a resume's.
	queuedElsewhere := stored.DeepCopy()
	queuedElsewhere.Spec.ManagedBy, queuedElsewhere.Spec.Suspend = ptr.To(kueue.MultiKueueControllerName), ptr.To(true)
	resumedElsewhere := optIn.DeepCopy()
	resumedElsewhere.Spec.ManagedBy, resumedElsewhere.Spec.Suspend = ptr.To(kueue.MultiKueueControllerName), ptr.To(false)

	review := func(op admissionv1.Operation, job, old *trainer.TrainJob, dryRun bool) admission.Request {
		raw := func(j *trainer.TrainJob) runtime.RawExtension {
			if j == nil {
				return runtime.RawExtension{}
			}
			b, err := json.Marshal(j)
			if err != nil {
				t.Fatal(err)
			}
			return runtime.RawExtension{Raw: b}
		}
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "1", Operation: op, Namespace: "team-a", Name: "run",
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:tools:mesh"},
			Object:   raw(job), OldObject: raw(old), DryRun: ptr.To(dryRun),
		}}
	}
	denial := "mpiguard denied an update of this TrainJob by system:serviceaccount:tools:mesh: TrainJob team-a/run violates 1 mpiguard policy:\n- [istio-opt-out]"
	for _, tc := range []struct {
		name    string
		handler func(*admitter) admission.Handler
		req     admission.Request
		denied  bool
		want    []recordedEvent // Note: its prefix
	}{{
		name:    "a denied update by another manager",
		handler: func(a *admitter) admission.Handler { return Validator{a} },
		req:     review(admissionv1.Update, optIn, stored, false),
		denied:  true,
		want:    []recordedEvent{{Regarding: "team-a/run", Type: "Warning", Reason: ReasonUpdateDenied, Action: "Update", Note: denial}},
	}, {
		name:    "a denied resume of a job MultiKueue runs elsewhere",
		handler: func(a *admitter) admission.Handler { return Validator{a} },
		req:     review(admissionv1.Update, resumedElsewhere, queuedElsewhere, false),
		denied:  true,
		want: []recordedEvent{{Regarding: "team-a/run", Type: "Warning", Reason: ReasonUpdateDenied, Action: "Resume",
			Note: "mpiguard denied the resume of this TrainJob by system:serviceaccount:tools:mesh: TrainJob team-a/run violates 1 mpiguard policy:\n- [istio-opt-out]"}},
	}, {
		name:    "the same as a dry run",
		handler: func(a *admitter) admission.Handler { return Validator{a} },
		req:     review(admissionv1.Update, optIn, stored, true),
		denied:  true,
	}, {
		name:    "a denied create: its submitter has the answer, and there is no object",
		handler: func(a *admitter) admission.Handler { return Validator{a} },
		req:     review(admissionv1.Create, suspendedOptIn, nil, false),
		denied:  true,
	}, {
		name:    "an allowed update",
		handler: func(a *admitter) admission.Handler { return Validator{a} },
		req:     review(admissionv1.Update, allowed, stored, false),
	}, {
		name:    "an update the mutating webhook refuses (its runtime is gone)",
		handler: func(a *admitter) admission.Handler { return Mutator{a} },
		req:     review(admissionv1.Update, gone, stored, false),
		denied:  true,
		want: []recordedEvent{{Regarding: "team-a/run", Type: "Warning", Reason: ReasonUpdateDenied, Action: "Update",
			Note: "mpiguard denied an update of this TrainJob by system:serviceaccount:tools:mesh: "}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAdmitter(t, rt, ns)
			seen := &eventsSeen{}
			a.recorder = seen
			resp := tc.handler(a).Handle(context.Background(), tc.req)
			if resp.Allowed == tc.denied {
				t.Fatalf("allowed %t, want %t: %v", resp.Allowed, !tc.denied, resp.Result)
			}
			got := seen.list
			for i := range got {
				if i < len(tc.want) && strings.HasPrefix(got[i].Note, tc.want[i].Note) {
					got[i].Note = tc.want[i].Note
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
