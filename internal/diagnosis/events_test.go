package diagnosis

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestWarningOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := corev1.ObjectReference{Kind: "Job", Name: "t-smoke-node-0"}
	cases := map[string]struct {
		event corev1.Event
		want  Warning
	}{
		"core/v1, as the Job controller records it": {
			event: corev1.Event{InvolvedObject: job, Reason: "FailedCreate", Message: "m", Count: 4, LastTimestamp: metav1.NewTime(t0)},
			want:  Warning{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Message: "m", Count: 4, Last: t0},
		},
		"events.k8s.io/v1 seen through core/v1: eventTime, no count": {
			event: corev1.Event{InvolvedObject: job, Reason: "JobCreationFailed", Message: "m", EventTime: metav1.NewMicroTime(t0)},
			want:  Warning{Kind: "Job", Name: "t-smoke-node-0", Reason: "JobCreationFailed", Message: "m", Count: 1, Last: t0},
		},
		"a series: its count and last observation": {
			event: corev1.Event{InvolvedObject: job, Reason: "FailedCreate", Message: "m", EventTime: metav1.NewMicroTime(t0),
				Series: &corev1.EventSeries{Count: 9, LastObservedTime: metav1.NewMicroTime(t0.Add(time.Minute))}},
			want: Warning{Kind: "Job", Name: "t-smoke-node-0", Reason: "FailedCreate", Message: "m", Count: 9, Last: t0.Add(time.Minute)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, WarningOf(&tc.event)); diff != "" {
				t.Errorf("WarningOf (-want +got):\n%s", diff)
			}
		})
	}
}
