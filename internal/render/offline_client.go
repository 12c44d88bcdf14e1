package render

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
)

// The Trainer's runtimes read what they need through a controller-runtime client:
// the runtime named by the TrainJob, an earlier runtime snapshot, the SSH Secret and
// an existing JobSet. To render offline and concurrently, every Get is answered from
// the render request carried in the context, never from shared state: the client
// itself is immutable and safe to share between goroutines.

// renderRequestKey is the context key of the request being rendered.
type renderRequestKey struct{}

// renderRequest is what the offline client answers from during one Render call.
type renderRequest struct {
	runtime client.Object
	// secrets are the Secrets the plugins asked for: the Trainer creates
	// each when it is missing (the MPI plugin's SSH auth Secret), so each is
	// an object the job creates (objects.go).
	secrets []string
}

func withRenderRequest(ctx context.Context, req *renderRequest) context.Context {
	return context.WithValue(ctx, renderRequestKey{}, req)
}

// newOfflineClient returns a client whose reads are answered from the render request:
//   - the ClusterTrainingRuntime/TrainingRuntime: the request's runtime (deep-copied
//     into the caller's object, as a real client would decode a fresh copy);
//   - the SSH auth Secret: reported as existing, so the MPI plugin does not generate an
//     ECDSA P-521 key pair per render (the key is not part of what the job requests);
//   - anything else (runtime snapshot ConfigMap, JobSet, PodGroup, PriorityClass...):
//     not found, which is the state of a TrainJob that is being created.
//
// Writes (the runtime snapshot the Trainer applies) are discarded.
//
// Nothing reaches the fake client's object tracker, so it gets the deduced
// type converter: the default one parses client-go's whole OpenAPI schema
// for server-side apply, CPU and memory spent at every start of
// `mpiguard check` for writes that are discarded.
func newOfflineClient(scheme *runtime.Scheme) client.Client {
	base := fake.NewClientBuilder().WithScheme(scheme).WithTypeConverters(managedfields.NewDeducedTypeConverter()).Build()
	return interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			return offlineGet(ctx, key, obj)
		},
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return nil
		},
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return nil
		},
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return nil
		},
		Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
			return nil
		},
		Patch: func(context.Context, client.WithWatch, client.Object, client.Patch, ...client.PatchOption) error {
			return nil
		},
	})
}

func offlineGet(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	req, _ := ctx.Value(renderRequestKey{}).(*renderRequest)
	switch out := obj.(type) {
	case *trainer.ClusterTrainingRuntime:
		if in, ok := reqRuntime[*trainer.ClusterTrainingRuntime](req); ok && in.Name == key.Name {
			in.DeepCopyInto(out)
			return nil
		}
		return notFound(trainer.GroupVersion.WithResource("clustertrainingruntimes").GroupResource(), key.Name)
	case *trainer.TrainingRuntime:
		if in, ok := reqRuntime[*trainer.TrainingRuntime](req); ok && in.Name == key.Name && in.Namespace == key.Namespace {
			in.DeepCopyInto(out)
			return nil
		}
		return notFound(trainer.GroupVersion.WithResource("trainingruntimes").GroupResource(), key.Name)
	case *corev1.Secret:
		// Pretend the SSH auth Secret exists: see newOfflineClient.
		out.Name, out.Namespace = key.Name, key.Namespace
		if req != nil {
			req.secrets = append(req.secrets, key.Name)
		}
		return nil
	default:
		gvk, err := apiutilGVK(obj)
		if err != nil {
			return err
		}
		return notFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
}

func reqRuntime[T client.Object](req *renderRequest) (T, bool) {
	var zero T
	if req == nil || req.runtime == nil {
		return zero, false
	}
	rt, ok := req.runtime.(T)
	return rt, ok
}

func notFound(gr schema.GroupResource, name string) error {
	return apierrors.NewNotFound(gr, name)
}

// apiutilGVK names the kind of obj for a not-found error without a scheme lookup
// (the object may be of a type the scheme does not know, such as a PodGroup).
func apiutilGVK(obj client.Object) (schema.GroupVersionKind, error) {
	if obj == nil {
		return schema.GroupVersionKind{}, fmt.Errorf("offline client: Get called with a nil object")
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() {
		return gvk, nil
	}
	return schema.GroupVersionKind{Kind: fmt.Sprintf("%T", obj)}, nil
}

// noopIndexer satisfies client.FieldIndexer: offline there is no cache to index.
type noopIndexer struct{}

func (noopIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}
