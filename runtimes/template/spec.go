package template

import (
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerconstants "github.com/kubeflow/trainer/v2/pkg/constants"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// Istio opt-out keys. The sidecar key is honoured as a label (preferred) or an
// annotation; ambient mode is only switched off by the label.
const (
	istioSidecarInject = "sidecar.istio.io/inject"
	istioDataplaneMode = "istio.io/dataplane-mode"
	defaultScheduler   = "default-scheduler"
)

// ValidateSpec checks an MPI runtime template for what the Trainer does not
// check. errs are denials; warnings are returned to kubectl as admission
// warnings. Runtimes without mlPolicy.mpi are not governed: both results are
// empty.
func ValidateSpec(spec *trainer.TrainingRuntimeSpec) (errs field.ErrorList, warnings field.ErrorList) {
	if !isMPI(spec) {
		return nil, nil
	}
	v := newTemplateView(spec)
	errs = append(errs, v.validateJobs()...)
	errs = append(errs, v.validateAncestor()...)
	errs = append(errs, v.validateReplicas()...)
	errs = append(errs, v.validateDeadlines()...)
	gangErrs, gangWarnings := v.validateGang()
	errs = append(errs, gangErrs...)
	warnings = append(warnings, gangWarnings...)
	warnings = append(warnings, v.warnIstio()...)
	warnings = append(warnings, v.warnStartup()...)
	warnings = append(warnings, v.warnWorkerResources()...)
	return errs, warnings
}

var rjPath = field.NewPath("spec", "template", "spec", "replicatedJobs")

// validateJobs: the MPI plugin works on jobs named launcher and node, and mounts
// the hostfile and SSH keys only into containers named node.
func (v *templateView) validateJobs() field.ErrorList {
	var errs field.ErrorList
	runLauncherAsNode := ptr.Deref(v.spec.MLPolicy.MPI.RunLauncherAsNode, false)
	if v.launcher == nil {
		errs = append(errs, field.Required(rjPath,
			"an MPI runtime needs a replicated job named \"launcher\": the Trainer mounts the hostfile only into that job, so mpirun has nowhere to run; add a job named launcher with a container named node"))
	}
	if v.worker == nil && !runLauncherAsNode {
		errs = append(errs, field.Required(rjPath,
			"an MPI runtime with runLauncherAsNode: false needs a replicated job named \"node\": the Trainer lists only that job's pods in the hostfile, so mpirun would have no Workers; add a job named node (or set mlPolicy.mpi.runLauncherAsNode: true)"))
	}
	for _, j := range v.mpiJobs() {
		if c, _ := j.nodeContainer(); c == nil {
			spec, p := j.podSpec()
			names := make([]string, 0, len(spec.Containers))
			for _, c := range spec.Containers {
				names = append(names, c.Name)
			}
			role := "Worker"
			if j == v.launcher {
				role = "launcher"
			}
			errs = append(errs, field.Invalid(p.Child("containers"), names,
				fmt.Sprintf("the %s job has no container named \"node\": the Trainer's MPI plugin mounts SSH keys%s only into containers named node, so mpirun cannot reach the Workers; rename the MPI container to node",
					role, map[bool]string{true: " and the hostfile", false: ""}[j == v.launcher])))
		}
	}
	return errs
}

// validateAncestor: exactly one of launcher and node carries the ancestor label,
// and an ancestor-labelled launcher needs mlPolicy.numNodes 1 because the Trainer
// sizes the ancestor-labelled job from it.
func (v *templateView) validateAncestor() field.ErrorList {
	if v.launcher == nil || v.worker == nil {
		return nil
	}
	var errs field.ErrorList
	key := trainerconstants.LabelTrainJobAncestor
	l, w := v.launcher.hasAncestorLabel(), v.worker.hasAncestorLabel()
	switch {
	case l && w:
		errs = append(errs, field.Invalid(v.worker.path.Child("template", "metadata", "labels").Key(key), trainerconstants.AncestorTrainer,
			"both the launcher and the node job carry the trainer ancestor label: the Trainer then applies the TrainJob's command, image and resources to both and sizes both from numNodes; keep the label on the launcher only"))
	case !l && !w:
		errs = append(errs, field.Required(v.launcher.path.Child("template", "metadata", "labels").Key(key),
			"neither the launcher nor the node job carries the label "+key+"=trainer: the TrainJob's command, args, image and resources would be applied nowhere; add it to the launcher job"))
	}
	if l {
		if n := ptr.Deref(v.spec.MLPolicy.NumNodes, 1); n != 1 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "mlPolicy", "numNodes"), n,
				fmt.Sprintf("is %d but the launcher carries the trainer ancestor label: the Trainer sizes the ancestor-labelled job from mlPolicy.numNodes, so it would start %d launchers instead of 1; set mlPolicy.numNodes to 1 and let TrainJob.spec.trainer.numNodes set the Worker count", n, n)))
		}
	}
	return errs
}

func (v *templateView) validateReplicas() field.ErrorList {
	var errs field.ErrorList
	for _, j := range v.mpiJobs() {
		if j.job.Replicas != 1 {
			errs = append(errs, field.Invalid(j.path.Child("replicas"), j.job.Replicas,
				fmt.Sprintf("must be 1: the Trainer does not support replicated MPI jobs (%d copies of the %q job would each get their own pods but one hostfile); scale Workers with TrainJob.spec.trainer.numNodes instead", j.job.Replicas, j.job.Name)))
		}
	}
	return errs
}

// validateDeadlines: a deadline inside the template kills a long training run
// mid-way, and every TrainJob inherits it. TrainJob.spec.activeDeadlineSeconds is
// the per-job place for it.
func (v *templateView) validateDeadlines() field.ErrorList {
	var errs field.ErrorList
	for i := range v.spec.Template.Spec.ReplicatedJobs {
		rj := &v.spec.Template.Spec.ReplicatedJobs[i]
		p := rjPath.Index(i).Child("template", "spec")
		if d := rj.Template.Spec.ActiveDeadlineSeconds; d != nil {
			errs = append(errs, field.Forbidden(p.Child("activeDeadlineSeconds"),
				fmt.Sprintf("is %ds in the runtime template: every TrainJob using this runtime would be killed after %ds however long it needs; remove it and set TrainJob.spec.activeDeadlineSeconds per job", *d, *d)))
		}
		if d := rj.Template.Spec.Template.Spec.ActiveDeadlineSeconds; d != nil {
			errs = append(errs, field.Forbidden(p.Child("template", "spec", "activeDeadlineSeconds"),
				fmt.Sprintf("is %ds on the pod template: each pod would be killed after %ds and MPI aborts the whole run; remove it and set TrainJob.spec.activeDeadlineSeconds per job", *d, *d)))
		}
	}
	return errs
}

// validateGang: a PodGroup only gangs pods that the matching scheduler places.
func (v *templateView) validateGang() (errs, warnings field.ErrorList) {
	pgp := v.spec.PodGroupPolicy
	volcano := pgp != nil && pgp.Volcano != nil
	cosched := pgp != nil && pgp.Coscheduling != nil
	if volcano && cosched {
		errs = append(errs, field.Invalid(field.NewPath("spec", "podGroupPolicy"), "coscheduling+volcano",
			"sets both coscheduling and volcano: a TrainJob can be ganged by one scheduler only; keep one of them"))
		return errs, nil
	}
	for _, j := range v.mpiJobs() {
		spec, p := j.podSpec()
		name, path := spec.SchedulerName, p.Child("schedulerName")
		switch {
		case volcano && name != catalog.VolcanoSchedulerName:
			errs = append(errs, field.Invalid(path, name,
				fmt.Sprintf("podGroupPolicy.volcano creates a Volcano PodGroup, but the %q job's pods go to scheduler %q, which ignores it: the gang is never enforced; set schedulerName: volcano", j.job.Name, orDefault(name))))
		case cosched && (name == "" || name == defaultScheduler || name == catalog.VolcanoSchedulerName):
			errs = append(errs, field.Invalid(path, name,
				fmt.Sprintf("podGroupPolicy.coscheduling creates a scheduler-plugins PodGroup, but the %q job's pods go to scheduler %q, which does not run the Coscheduling plugin: the gang is never enforced; set schedulerName to your scheduler-plugins scheduler (e.g. %s)", j.job.Name, orDefault(name), catalog.CoschedulingSchedulerName)))
		case pgp == nil && name == catalog.VolcanoSchedulerName:
			warnings = append(warnings, field.Invalid(path, name,
				fmt.Sprintf("the %q job's pods use the Volcano scheduler but the runtime has no podGroupPolicy: Volcano schedules each pod on its own and MPI Workers may start without their peers; add podGroupPolicy.volcano: {}", j.job.Name)))
		}
	}
	if v.launcher != nil && v.worker != nil {
		ls, _ := v.launcher.podSpec()
		ws, wp := v.worker.podSpec()
		if pgp != nil && ls.SchedulerName != ws.SchedulerName {
			errs = append(errs, field.Invalid(wp.Child("schedulerName"), ws.SchedulerName,
				fmt.Sprintf("differs from the launcher's %q: a gang spans both jobs, so both must use the same scheduler", orDefault(ls.SchedulerName))))
		}
	}
	return errs, warnings
}

func orDefault(scheduler string) string {
	if scheduler == "" {
		return defaultScheduler
	}
	return scheduler
}

// warnIstio: an Istio sidecar or ambient ztunnel intercepts the SSH and MPI TCP
// traffic between pods (and a sidecar keeps Jobs from completing).
func (v *templateView) warnIstio() field.ErrorList {
	var warnings field.ErrorList
	for _, j := range v.mpiJobs() {
		meta := j.job.Template.Spec.Template.ObjectMeta
		p := j.podMetaPath()
		if meta.Labels[istioSidecarInject] != "false" && meta.Annotations[istioSidecarInject] != "false" {
			warnings = append(warnings, field.Required(p.Child("labels").Key(istioSidecarInject),
				fmt.Sprintf("the %q pods have no Istio sidecar opt-out: in an injected namespace the sidecar intercepts SSH and MPI traffic and keeps the Job from completing; add the label %s: \"false\"", j.job.Name, istioSidecarInject)))
		}
		if meta.Labels[istioDataplaneMode] != "none" {
			warnings = append(warnings, field.Required(p.Child("labels").Key(istioDataplaneMode),
				fmt.Sprintf("the %q pods have no Istio ambient opt-out: in an ambient namespace ztunnel captures the MPI traffic; add the label %s: none", j.job.Name, istioDataplaneMode)))
		}
	}
	return warnings
}

// warnStartup: without readiness on sshd and a launcher that waits for it, the
// launcher's first ssh races the Workers' sshd and mpirun fails at random.
func (v *templateView) warnStartup() field.ErrorList {
	if v.launcher == nil || v.worker == nil {
		return nil
	}
	var warnings field.ErrorList
	if c, i := v.worker.nodeContainer(); c != nil && c.ReadinessProbe == nil {
		_, p := v.worker.podSpec()
		warnings = append(warnings, field.Required(p.Child("containers").Index(i).Child("readinessProbe"),
			"the Worker's node container has no readiness probe: nothing tells the launcher when sshd accepts connections; add a tcpSocket probe on the sshd port"))
	}
	waits := false
	for _, d := range v.launcher.job.DependsOn {
		if d.Name == trainerconstants.Node && d.Status == jobsetv1alpha2.DependencyReady {
			waits = true
		}
	}
	if !waits {
		warnings = append(warnings, field.Required(v.launcher.path.Child("dependsOn"),
			"the launcher does not wait for the Workers: mpirun may ssh to Workers whose sshd is not up yet and fail; add dependsOn: [{name: node, status: Ready}] (list the node job before the launcher)"))
	}
	return warnings
}

// warnWorkerResources: the Trainer merges spec.trainer.resourcesPerNode into the
// ancestor-labelled job and, only with runLauncherAsNode, into the node job
// (runtime/core newRuntimeInfo, v2.3); runtime patches cannot set resources.
// With the label on the launcher and runLauncherAsNode false, a TrainJob can
// therefore never size its Workers: its GPUs land on the launcher.
func (v *templateView) warnWorkerResources() field.ErrorList {
	if v.launcher == nil || v.worker == nil || !v.launcher.hasAncestorLabel() || ptr.Deref(v.spec.MLPolicy.MPI.RunLauncherAsNode, false) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "mlPolicy", "mpi", "runLauncherAsNode"), false,
		"the launcher carries the trainer ancestor label and does not run as a node: the Trainer then merges a TrainJob's spec.trainer.resourcesPerNode into the launcher only, so TrainJobs cannot give their Workers GPUs or CPUs (the Workers keep this template's resources); set mlPolicy.mpi.runLauncherAsNode: true, or size the Workers in this template and tell users resourcesPerNode sizes the launcher")}
}
