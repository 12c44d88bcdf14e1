package audit

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	reports "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestPreviousReportReadsReader: the controller reads the previous Report
// with Reader (the apiserver), so the manager starts no Report informer;
// Client (the manager's cached client) is only for writes then.
func TestPreviousReportReadsReader(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := reports.Install(scheme); err != nil {
		t.Fatal(err)
	}
	stored := &reports.Report{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: ReportName},
		Results: []reports.ReportResult{{Policy: "p", Result: "fail"}}}
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).Build()
	cached := fake.NewClientBuilder().WithScheme(scheme).Build() // never read: holds nothing
	for name, w := range map[string]ReportWriter{
		"Reader set":   {Client: cached, Reader: live},
		"Client alone": {Client: live},
	} {
		got, err := w.PreviousReport(context.Background(), "team-a")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(stored.Results, got); diff != "" {
			t.Errorf("%s: previous results (-want +got):\n%s", name, diff)
		}
	}
}
