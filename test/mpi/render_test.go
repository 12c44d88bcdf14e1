package mpi

import (
	"context"
	"encoding/json"
	jobsetcontrollers "sigs.k8s.io/jobset/pkg/controllers"
	"strconv"
	"sync"
	"testing"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetv1alpha2ac "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"
	"sigs.k8s.io/jobset/pkg/util/placement"

	"github.com/mpiguard/mpiguard/internal/render"
)

// rendered is what the Trainer controller applies for one TrainJob, and the
// pods the JobSet and Job controllers then create from it.
type rendered struct {
	jobSet     *jobsetv1alpha2.JobSet
	configMaps map[string]map[string]string
	secrets    map[string]map[string][]byte
	// pods in the order the replicated jobs are listed.
	pods []podSpec
}

// podSpec is one pod of the JobSet: its replicated job and the names it gets.
type podSpec struct {
	replicatedJob string
	// hostname is the pod's hostname, subdomain the JobSet's headless Service:
	// hostname.subdomain is the name in the Trainer's hostfile.
	hostname, subdomain string
	spec                corev1.PodSpec
}

// trainerMu serialises the Trainer's runtime framework: runtimecore.New keeps
// the runtimes it builds (and the client they read) in package variables.
var trainerMu sync.Mutex

// renderWithTrainer runs the Trainer v2.3.0 controller's own step for a new
// TrainJob, ClusterTrainingRuntime.NewObjects, over a fake client holding only
// the runtime (defaulted as the apiserver would): it returns the JobSet, the
// hostfile ConfigMap and the SSH Secret the controller would apply.
func renderWithTrainer(t *testing.T, rt *trainer.ClusterTrainingRuntime, job *trainer.TrainJob) *rendered {
	t.Helper()
	rt, job = rt.DeepCopy(), job.DeepCopy()
	if err := render.ApplyDefaults(job, rt); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(trainer.AddToScheme(scheme))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rt).Build()
	cfg := &configapi.Configuration{}
	configapi.SetDefaults_Configuration(cfg)

	ctx := context.Background()
	trainerMu.Lock()
	runtimes, err := runtimecore.New(ctx, c, noopIndexer{}, cfg)
	var objects []runtime.ApplyConfiguration
	if err == nil {
		objects, err = runtimes[trainerruntime.RuntimeRefToRuntimeRegistryKey(job.Spec.RuntimeRef)].NewObjects(ctx, job)
	}
	trainerMu.Unlock()
	if err != nil {
		t.Fatalf("the Trainer cannot build TrainJob %s on %s: %v", job.Name, rt.Name, err)
	}

	out := &rendered{configMaps: map[string]map[string]string{}, secrets: map[string]map[string][]byte{}}
	for _, obj := range objects {
		switch o := obj.(type) {
		case *jobsetv1alpha2ac.JobSetApplyConfiguration:
			out.jobSet = &jobsetv1alpha2.JobSet{}
			roundTrip(t, o, out.jobSet)
		case *corev1ac.ConfigMapApplyConfiguration:
			out.configMaps[*o.Name] = o.Data
		case *corev1ac.SecretApplyConfiguration:
			out.secrets[*o.Name] = o.Data
		}
	}
	if out.jobSet == nil {
		t.Fatalf("the Trainer built no JobSet for TrainJob %s", job.Name)
	}
	out.pods = jobSetPods(out.jobSet)
	return out
}

// jobSetPods lists the pods of a JobSet as its controller and the Job
// controller name them: replicas Jobs per replicated job, parallelism Indexed
// pods per Job, hostname <jobset>-<replicated job>-<job index>-<pod index> in
// the subdomain of the JobSet's headless Service.
func jobSetPods(js *jobsetv1alpha2.JobSet) []podSpec {
	subdomain := jobsetcontrollers.GetSubdomain(js)
	var pods []podSpec
	for _, rj := range js.Spec.ReplicatedJobs {
		for j := range rj.Replicas {
			for p := range ptr.Deref(rj.Template.Spec.Parallelism, 1) {
				pods = append(pods, podSpec{
					replicatedJob: rj.Name,
					hostname:      placement.GenPodName(js.Name, rj.Name, strconv.Itoa(int(j)), strconv.Itoa(int(p))),
					subdomain:     subdomain,
					spec:          *rj.Template.Spec.Template.Spec.DeepCopy(),
				})
			}
		}
	}
	return pods
}

// hostfile returns the Trainer's hostfile for TrainJob name.
func (r *rendered) hostfile(t *testing.T, name string) string {
	t.Helper()
	data, ok := r.configMaps[name+constants.MPIHostfileConfigMapSuffix][constants.MPIHostfileName]
	if !ok {
		t.Fatalf("the Trainer rendered no hostfile ConfigMap for %s", name)
	}
	return data
}

// roundTrip converts an apply configuration to its typed object through the
// JSON both share (what the Trainer's server-side apply sends).
func roundTrip(t *testing.T, from, to any) {
	t.Helper()
	data, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, to); err != nil {
		t.Fatal(err)
	}
}

// noopIndexer satisfies client.FieldIndexer: there is no cache to index.
type noopIndexer struct{}

func (noopIndexer) IndexField(context.Context, client.Object, string, client.IndexerFunc) error {
	return nil
}
