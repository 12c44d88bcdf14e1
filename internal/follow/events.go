package follow

import (
	"context"
	"fmt"
	"os"
	"time"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The follower writes its Events itself rather than through client-go's
// events recorder: the recorder folds every Event with the same reason on
// the same object into a series it writes back only every 30 minutes, so a
// second Worker's OOMKilled, or a waiting state told again 30 s later, would
// not be seen. Here each failure is an Event of its own, and a waiting state
// told again with the same note is the same Event's series, patched at once
// (kubectl shows "x3 over 60s"). A note is immutable: a changed one is a new
// Event.

// actionFollow is the Events' action.
const actionFollow = "Follow"

// told is the Event that last said a job's waiting state.
type told struct {
	name, note string
	count      int32
}

// eventWriter writes the follower's Events.
type eventWriter struct {
	client   client.Client
	instance string
}

func newEventWriter(c client.Client) eventWriter {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	return eventWriter{client: c, instance: ControllerName + "-" + host}
}

// create writes a new Event about job and returns its name:
// <job>.<nanoseconds in hex>, as client-go names Events, one nanosecond later
// if that name is taken.
func (w eventWriter) create(ctx context.Context, job *trainer.TrainJob, typ, reason, msg string, now time.Time) (string, error) {
	for at := now; ; at = at.Add(time.Nanosecond) {
		e := &eventsv1.Event{
			ObjectMeta:          metav1.ObjectMeta{Namespace: job.Namespace, Name: fmt.Sprintf("%s.%x", job.Name, at.UnixNano())},
			EventTime:           metav1.NewMicroTime(now),
			ReportingController: ControllerName,
			ReportingInstance:   w.instance,
			Action:              actionFollow,
			Reason:              reason,
			Type:                typ,
			Note:                note(msg),
			Regarding: corev1.ObjectReference{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind,
				Namespace: job.Namespace, Name: job.Name, UID: job.UID},
		}
		err := w.client.Create(ctx, e)
		switch {
		case err == nil:
			return e.Name, nil
		case apierrors.IsAlreadyExists(err) && at.Sub(now) < time.Microsecond:
			continue
		default:
			return "", fmt.Errorf("writing Event %s on TrainJob %s/%s: %w", reason, job.Namespace, job.Name, err)
		}
	}
}

// repeat counts one more occurrence in the series of Event name; false when
// the Event is gone (expired: the caller writes a new one).
func (w eventWriter) repeat(ctx context.Context, ns, name string, count int32, now time.Time) (bool, error) {
	e := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := fmt.Sprintf(`{"series":{"count":%d,"lastObservedTime":%q}}`, count, now.UTC().Format(metav1.RFC3339Micro))
	err := w.client.Patch(ctx, e, client.RawPatch("application/merge-patch+json", []byte(patch)))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
