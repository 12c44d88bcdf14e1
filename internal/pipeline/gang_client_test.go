package pipeline

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/mpiguard/mpiguard/internal/gang"
)

// TestClientClusterVolcanoQueues: the queues as listed; an apiserver that
// serves no Queue kind is a cluster without Volcano (not an error, which
// would refuse every Volcano job with no reason it can act on); any other
// read error is an error (never a silent "no queues").
func TestClientClusterVolcanoQueues(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := volcanov1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	q := &volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "team-a", ResourceVersion: "1"}}
	failing := func(err error) client.Client {
		return interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).Build(), interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return err },
		})
	}

	got, err := ClientCluster{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(q).Build()}.VolcanoQueues(context.Background())
	if err != nil || !got.Served || len(got.Items) != 1 || got.Items[0].Name != "team-a" {
		t.Errorf("listed: %+v, %v; want the one queue, served", got, err)
	}

	noKind := &meta.NoKindMatchError{GroupKind: volcanov1beta1.SchemeGroupVersion.WithKind("Queue").GroupKind()}
	got, err = ClientCluster{Reader: failing(noKind)}.VolcanoQueues(context.Background())
	if err != nil {
		t.Fatalf("no Queue kind served: %v, want no error", err)
	}
	if diff := cmp.Diff(&gang.Queues{}, got); diff != "" {
		t.Errorf("no Queue kind served (-want +got):\n%s", diff)
	}

	if _, err = (ClientCluster{Reader: failing(errors.New("etcdserver: request timed out"))}).VolcanoQueues(context.Background()); err == nil {
		t.Error("a failed list gave no error")
	}
}
