package devcluster

import (
	"context"
	"fmt"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainercontroller "github.com/kubeflow/trainer/v2/pkg/controller"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// SchedulerPluginsModule provides the coscheduling PodGroup CRD.
const SchedulerPluginsModule = "sigs.k8s.io/scheduler-plugins"

// SchedulerPluginsPodGroupCRD is the scheduler-plugins PodGroup CRD file from the
// pinned module; pass it in Options.ExtraCRDDirs so the Trainer's coscheduling
// plugin creates PodGroups for runtimes with podGroupPolicy.coscheduling.
func SchedulerPluginsPodGroupCRD() (string, error) {
	return moduleSubdir(SchedulerPluginsModule, "config/crd/bases/scheduling.x-k8s.io_podgroups.yaml")
}

// TrainerController registers the Kubeflow Trainer's own controllers (TrainJob,
// TrainingRuntime, ClusterTrainingRuntime) from the pinned module on mgr, with the
// Trainer's default configuration, exactly as trainer-controller-manager does
// (minus its webhooks and cert management). Use it as Options.Setup:
//
//	framework.Options{Setup: framework.TrainerController}
//
// A TrainJob then really becomes a JobSet, an MPI hostfile ConfigMap and an SSH
// Secret. Nothing runs the JobSet, Job or kubelet controllers unless a suite asks
// (Env.JobSetController, Options.KubeControllers; no kubelet ever): tests that
// need running pods create them from the JobSet's templates and set their status
// themselves.
// Gang-scheduling plugins stay idle unless their PodGroup CRDs are installed.
func TrainerController(ctx context.Context, mgr ctrl.Manager) error {
	// The gang-scheduling plugins watch PodGroups when their CRDs are installed
	// (see SchedulerPluginsPodGroupCRD); the clients must know the types.
	if err := schedulerpluginsv1alpha1.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	if err := volcanov1beta1.AddToScheme(mgr.GetScheme()); err != nil {
		return err
	}
	// In a cluster the Trainer is its own process with its own cache; it
	// gets its own manager here too, since mpiguard's cache holds only what
	// mpiguard reads (ConfigMaps of its own namespace, JobSet pods), not the
	// hostfile ConfigMaps and snapshots the Trainer reads in job namespaces.
	// Added to mpiguard's manager, it starts and stops with it, and on a
	// leader only, so several replicas still run one Trainer.
	tm, err := ctrl.NewManager(mgr.GetConfig(), ctrl.Options{
		Scheme:                 mgr.GetScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating the Trainer's manager: %w", err)
	}
	cfg := &configapi.Configuration{}
	configapi.SetDefaults_Configuration(cfg)
	runtimes, err := runtimecore.New(ctx, tm.GetClient(), tm.GetFieldIndexer(), cfg)
	if err != nil {
		return fmt.Errorf("initialising the Trainer's runtimes: %w", err)
	}
	// Controller names are global to the binary in controller-runtime; suites start one
	// manager, but skipping the check keeps a second Start in one binary possible.
	opts := controller.Options{SkipNameValidation: ptr.To(true)}
	if failed, err := trainercontroller.SetupControllers(tm, runtimes, opts); err != nil {
		return fmt.Errorf("setting up the Trainer's %s controller: %w", failed, err)
	}
	// A RunnableFunc, not tm itself: a manager has a cache, and runnables with
	// one start on every replica, not only the leader.
	return mgr.Add(manager.RunnableFunc(tm.Start))
}
