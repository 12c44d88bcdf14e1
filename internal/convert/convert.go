// Package convert turns the MPI Operator's kubeflow.org/v2beta1 MPIJobs into
// Kubeflow Trainer TrainJobs: the topology (the Launcher's and Workers' pod
// templates, the MPI settings) into a TrainingRuntime, the workload (how many
// Workers, Slots per worker, the Launcher's image and command, the run
// policy) into the TrainJob, as the Trainer's MPI plugin (v2.3.0) builds the
// Launcher and Workers from them. Every field read is accounted for in Notes:
// mapped, with no equivalent, done differently by the Trainer, or unknown.
// docs/migration.md is the reference.
package convert

import (
	"fmt"
	"slices"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// Gang schedulers the MPI Operator may run with (its --gang-scheduling flag):
// the MPIJob does not say which, so the user does.
const (
	GangNone             = ""
	GangVolcano          = "volcano"
	GangSchedulerPlugins = "scheduler-plugins"
)

// Options are the choices an MPIJob does not record.
type Options struct {
	// Gang is the gang scheduler the MPI Operator ran with: GangNone,
	// GangVolcano or GangSchedulerPlugins. It decides where
	// runPolicy.schedulingPolicy goes.
	Gang string
	// RuntimeName names the TrainingRuntime written (default: the MPIJob's
	// name with the suffix "-mpijob").
	RuntimeName string
	// Curated are the published curated runtimes (runtimes/catalog): when
	// one fits (curated.go), the TrainJob names it and no runtime is written.
	Curated []*trainer.ClusterTrainingRuntime
}

// Outcome classifies a Note.
type Outcome string

const (
	// Mapped means the field has a Trainer equivalent and was carried over.
	Mapped Outcome = "mapped"
	// Differs means the field was carried over or handled, but the Trainer behaves differently.
	Differs Outcome = "differs"
	// NoEquivalent means the Trainer has no such field; it was not carried over.
	NoEquivalent Outcome = "no equivalent"
	// Unknown means a field of the input that convert does not know; not carried over.
	Unknown Outcome = "unknown"
)

// Note says what became of one field of the MPIJob.
type Note struct {
	Outcome Outcome
	// Field is the MPIJob's field ("spec.slotsPerWorker").
	Field string
	// Text says where it went, or why not, and what to do.
	Text string
}

func (n Note) String() string { return fmt.Sprintf("%-13s %s: %s", n.Outcome, n.Field, n.Text) }

// Result is one MPIJob converted.
type Result struct {
	TrainJob *trainer.TrainJob
	// Runtime carries the MPIJob's pod templates: a TrainingRuntime in the
	// TrainJob's namespace, which the TrainJob references. Nil when a
	// curated runtime fits: the TrainJob names it.
	Runtime *trainer.TrainingRuntime
	Notes   []Note
}

// reservedEnv are the variables the Trainer's MPI plugin sets on the
// Launcher (constants.MPIReservedEnvNames): a value in the MPIJob's
// templates would be replaced.
var reservedEnv = constants.MPIReservedEnvNames

// Convert converts one MPIJob. unknown are the fields Read found that the
// types here do not know; each becomes an Unknown note. An MPIJob the Trainer
// cannot run at all (no Launcher, no Worker and no Launcher running as one,
// no container) is an error naming the field.
func Convert(job *MPIJob, unknown []string, opts Options) (*Result, error) {
	c := &converter{job: job, opts: opts}
	for _, f := range unknown {
		c.note(Unknown, f, "not a field of the MPI Operator's v2beta1 MPIJob or of the Kubernetes type it holds; not converted: check the spelling, or carry it over by hand")
	}
	if err := c.convert(); err != nil {
		return nil, err
	}
	return &Result{TrainJob: c.trainJob, Runtime: c.runtime, Notes: c.notes}, nil
}

type converter struct {
	job      *MPIJob
	opts     Options
	notes    []Note
	trainJob *trainer.TrainJob
	runtime  *trainer.TrainingRuntime
}

func (c *converter) note(o Outcome, field, format string, args ...any) {
	c.notes = append(c.notes, Note{Outcome: o, Field: field, Text: fmt.Sprintf(format, args...)})
}

func (c *converter) convert() error {
	job := c.job
	spec := job.Spec
	if job.Metadata.Name == "" {
		return fmt.Errorf("metadata.name: an MPIJob needs a name; the TrainJob gets the same one")
	}
	for name := range spec.MPIReplicaSpecs {
		if name != Launcher && name != Worker {
			return fmt.Errorf("spec.mpiReplicaSpecs.%s: the MPI Operator knows Launcher and Worker only", name)
		}
	}
	launcher := spec.MPIReplicaSpecs[Launcher]
	if launcher == nil {
		return fmt.Errorf("spec.mpiReplicaSpecs.Launcher: an MPIJob needs a Launcher")
	}
	if len(launcher.Template.Spec.Containers) == 0 {
		return fmt.Errorf("spec.mpiReplicaSpecs.Launcher.template.spec.containers: the Launcher has no container")
	}
	launcherAsWorker := ptr.Deref(spec.RunLauncherAsWorker, false)
	worker := spec.MPIReplicaSpecs[Worker]
	workers := int32(0)
	if worker != nil {
		workers = ptr.Deref(worker.Replicas, 0)
		if len(worker.Template.Spec.Containers) == 0 {
			return fmt.Errorf("spec.mpiReplicaSpecs.Worker.template.spec.containers: the Worker has no container")
		}
	}
	if workers < 1 {
		// The Trainer's MPI plugin always creates at least one Worker
		// (max(numNodes-1, 1) with the Launcher as a node).
		return fmt.Errorf("spec.mpiReplicaSpecs.Worker.replicas: %d Workers; the Trainer runs an MPI job with 1 Worker or more (a Launcher alone has no equivalent)", workers)
	}
	if n := ptr.Deref(launcher.Replicas, 1); n != 1 {
		return fmt.Errorf("spec.mpiReplicaSpecs.Launcher.replicas: %d; an MPIJob has exactly 1 Launcher", n)
	}
	slots := ptr.Deref(spec.SlotsPerWorker, 1)
	if slots < 1 {
		return fmt.Errorf("spec.slotsPerWorker: %d; must be 1 or more", slots)
	}
	ns := job.Metadata.Namespace
	runtimeName := c.opts.RuntimeName
	if runtimeName == "" {
		runtimeName = job.Metadata.Name + "-mpijob"
	}

	c.note(Mapped, "metadata", "name, namespace, labels and annotations are the TrainJob's (a kueue.x-k8s.io/queue-name label keeps the job in its Kueue LocalQueue)")
	if job.Status != nil {
		c.note(NoEquivalent, "status", "the MPI Operator's status is not converted; the Trainer writes the TrainJob's own")
	}

	// The TrainJob: the workload.
	numNodes := workers
	if launcherAsWorker {
		numNodes = workers + 1
	}
	main := launcher.Template.Spec.Containers[0]
	tj := &trainer.TrainJob{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Metadata.Name, Namespace: ns,
			Labels: job.Metadata.Labels, Annotations: job.Metadata.Annotations,
		},
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{
				APIGroup: ptr.To(trainer.GroupVersion.Group),
				Kind:     ptr.To(trainer.TrainingRuntimeKind),
				Name:     runtimeName,
			},
			Trainer: &trainer.Trainer{
				NumNodes:       ptr.To(numNodes),
				NumProcPerNode: ptr.To(slots),
			},
		},
	}
	if main.Image != "" {
		tj.Spec.Trainer.Image = ptr.To(main.Image)
	}
	tj.Spec.Trainer.Command = main.Command
	tj.Spec.Trainer.Args = main.Args
	if launcherAsWorker {
		c.note(Mapped, "spec.mpiReplicaSpecs.Worker.replicas", "%d Workers → TrainJob spec.trainer.numNodes %d (the Launcher counts as a node: runLauncherAsWorker)", workers, numNodes)
	} else {
		c.note(Mapped, "spec.mpiReplicaSpecs.Worker.replicas", "%d Workers → TrainJob spec.trainer.numNodes %d", workers, numNodes)
	}
	c.note(Mapped, "spec.mpiReplicaSpecs.Launcher.replicas", "1 Launcher: the runtime's launcher job (always 1)")
	c.note(Mapped, "spec.slotsPerWorker", "%d → TrainJob spec.trainer.numProcPerNode and the runtime's mlPolicy.mpi.numProcPerNode (every hostfile line says slots=%d; set explicitly, so the Trainer does not make it the GPU count)", slots, slots)
	c.note(Mapped, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0]", "image, command and args → TrainJob spec.trainer.image, command, args (the Trainer puts them on the Launcher's node container)")

	// The run policy.
	rp := spec.RunPolicy
	if rp.Suspend != nil {
		tj.Spec.Suspend = rp.Suspend
		c.note(Mapped, "spec.runPolicy.suspend", "%t → TrainJob spec.suspend (suspending the TrainJob suspends its JobSet: every pod, not only the Launcher's Job, is removed)", *rp.Suspend)
	}
	if rp.ActiveDeadlineSeconds != nil {
		tj.Spec.ActiveDeadlineSeconds = *rp.ActiveDeadlineSeconds
		c.note(Differs, "spec.runPolicy.activeDeadlineSeconds", "%d → TrainJob spec.activeDeadlineSeconds: it counts from the TrainJob's start and ends the whole job; the MPI Operator gave it to the Launcher's Job only", *rp.ActiveDeadlineSeconds)
	}
	if rp.CleanPodPolicy != nil {
		c.note(NoEquivalent, "spec.runPolicy.cleanPodPolicy", "%q: the Trainer has no clean-pod policy; when the Launcher finishes, the JobSet's success policy completes the job and JobSet deletes the Workers' Jobs that still run (the finished pods stay until the TrainJob is deleted)", *rp.CleanPodPolicy)
	}
	if rp.TTLSecondsAfterFinished != nil {
		c.note(NoEquivalent, "spec.runPolicy.ttlSecondsAfterFinished", "%d: the Trainer keeps a finished TrainJob until it is deleted; delete it yourself (or with a TTL controller of your own)", *rp.TTLSecondsAfterFinished)
	}
	if rp.ManagedBy != nil {
		switch *rp.ManagedBy {
		case MultiKueueController:
			tj.Spec.ManagedBy = rp.ManagedBy
			c.note(Mapped, "spec.runPolicy.managedBy", "%q → TrainJob spec.managedBy (MultiKueue dispatches the TrainJob)", *rp.ManagedBy)
		case MPIOperatorController:
			c.note(Mapped, "spec.runPolicy.managedBy", "%q: the Trainer's own controller manages the TrainJob (spec.managedBy left unset)", *rp.ManagedBy)
		default:
			tj.Spec.ManagedBy = rp.ManagedBy
			c.note(Differs, "spec.runPolicy.managedBy", "%q → TrainJob spec.managedBy: that controller must know TrainJobs", *rp.ManagedBy)
		}
	}

	// The runtime: the topology.
	impl := spec.MPIImplementation
	if impl == "" {
		impl = OpenMPI
	}
	sshPath := spec.SSHAuthMountPath
	if sshPath == "" {
		sshPath = DefaultSSHAuthMountPath
	}
	rt := &trainer.TrainingRuntime{
		TypeMeta: metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainingRuntimeKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: runtimeName, Namespace: ns,
			Labels: map[string]string{"trainer.kubeflow.org/framework": "mpi"},
			Annotations: map[string]string{
				"mpiguard.io/converted-from": APIVersion + " MPIJob " + job.Metadata.Name,
			},
		},
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: &trainer.MLPolicy{
				// The Trainer sizes the ancestor-labelled job (the launcher)
				// from this value: 1 Launcher. The TrainJob's numNodes sizes
				// the Workers (the MPI plugin's EnforceMLPolicy).
				NumNodes: ptr.To[int32](1),
				MLPolicySource: trainer.MLPolicySource{MPI: &trainer.MPIMLPolicySource{
					NumProcPerNode:    ptr.To(slots),
					MPIImplementation: ptr.To(trainer.MPIImplementationOpenMPI),
					SSHAuthMountPath:  ptr.To(sshPath),
					RunLauncherAsNode: ptr.To(launcherAsWorker),
				}},
			},
		},
	}
	c.note(Mapped, "spec.sshAuthMountPath", "%q → the runtime's mlPolicy.mpi.sshAuthMountPath", sshPath)
	c.note(Differs, "spec.sshAuthMountPath", "SSH keys: the Trainer generates its own key pair into Secret <trainjob>%s (id_rsa, id_rsa.pub, authorized_keys; modes 0640/0644) and mounts it into the node container of the Launcher and every Worker; the MPI Operator's Secret was <mpijob>-ssh", constants.MPISSHAuthSecretSuffix)
	switch impl {
	case OpenMPI:
		c.note(Mapped, "spec.mpiImplementation", "OpenMPI → the runtime's mlPolicy.mpi.mpiImplementation OpenMPI")
	case Intel, MPICH:
		c.note(Differs, "spec.mpiImplementation", "%s: the Trainer (v2.3) implements OpenMPI only: it writes an OpenMPI hostfile (/etc/mpi/hostfile, \"host slots=N\") and OMPI_MCA_* variables, not the %s variables the MPI Operator set; the runtime says OpenMPI, and the Launcher's command must turn the hostfile into Hydra's \"host:N\" (as mpiguard's curated mpiguard-%s runtime does)", impl, map[string]string{Intel: "I_MPI_HYDRA_*", MPICH: "HYDRA_*"}[impl], map[string]string{Intel: "intelmpi", MPICH: "mpich"}[impl])
	default:
		return fmt.Errorf("spec.mpiImplementation: %q; the MPI Operator knows OpenMPI, Intel and MPICH", impl)
	}
	c.note(Differs, "OMPI_MCA_*", "the Trainer sets %s on the Launcher's node container itself (as the MPI Operator did), and rejects a TrainJob whose spec.trainer.env sets one", strings.Join(sets.List(reservedEnv), ", "))
	if launcherAsWorker {
		c.note(Mapped, "spec.runLauncherAsWorker", "true → the runtime's mlPolicy.mpi.runLauncherAsNode: the Launcher has a hostfile line and runs ranks")
	} else {
		c.note(Mapped, "spec.runLauncherAsWorker", "false → the runtime's mlPolicy.mpi.runLauncherAsNode false: the hostfile lists the Workers only")
	}
	c.note(Differs, "hostfile", "the Trainer writes it into ConfigMap <trainjob>%s, mounted at %s/hostfile in the Launcher's node container; hosts are the JobSet's pod names (<trainjob>-node-0-0.<trainjob>, ...), not <mpijob>-worker-0.<mpijob>", constants.MPIHostfileConfigMapSuffix, constants.MPIHostfileDir)

	fit, why := curatedFit(job, c.opts.Gang, c.opts.Curated)
	if fit != nil {
		c.onCurated(tj, fit, workers)
		c.trainJob = tj
		return nil
	}
	c.note(Mapped, "runtime", "a TrainingRuntime %s of its own carries the pod templates: no curated runtime fits (%s)", runtimeName, why)

	workerJob, err := c.replicatedJob(worker, Worker, constants.Node, launcherAsWorker)
	if err != nil {
		return err
	}
	launcherJob, err := c.replicatedJob(launcher, Launcher, constants.Launcher, launcherAsWorker)
	if err != nil {
		return err
	}
	launcherJob.Template.Labels = map[string]string{constants.LabelTrainJobAncestor: constants.AncestorTrainer}
	if rp.BackoffLimit != nil {
		launcherJob.Template.Spec.BackoffLimit = rp.BackoffLimit
		c.note(Mapped, "spec.runPolicy.backoffLimit", "%d → the runtime's launcher Job spec.backoffLimit, as the MPI Operator set it on the Launcher's Job", *rp.BackoffLimit)
	}
	switch spec.LauncherCreationPolicy {
	case "", AtStartup:
		c.note(Mapped, "spec.launcherCreationPolicy", "AtStartup: the launcher job starts with the Workers (no dependsOn)")
	case WaitForWorkersReady:
		launcherJob.DependsOn = []jobsetv1alpha2.DependsOn{{Name: constants.Node, Status: jobsetv1alpha2.DependencyReady}}
		c.note(Mapped, "spec.launcherCreationPolicy", "WaitForWorkersReady → the launcher job dependsOn the node job being Ready (JobSet creates it once every Worker is Ready)")
	default:
		return fmt.Errorf("spec.launcherCreationPolicy: %q; the MPI Operator knows AtStartup and WaitForWorkersReady", spec.LauncherCreationPolicy)
	}
	rt.Spec.Template.Spec = jobsetv1alpha2.JobSetSpec{
		// Workers first: JobSet lets a job depend on an earlier one only.
		ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{workerJob, launcherJob},
		// Workers resolve each other before they are Ready, as the MPI
		// Operator's headless Service published them.
		Network: &jobsetv1alpha2.Network{PublishNotReadyAddresses: ptr.To(true)},
		// The job succeeds when the Launcher does, as an MPIJob.
		SuccessPolicy: &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{constants.Launcher}},
	}
	// Every pod: the Workers and the Launcher.
	if err := c.scheduling(rt, workers+1); err != nil {
		return err
	}
	c.trainJob, c.runtime = tj, rt
	return nil
}

// replicatedJob builds the runtime's replicated job of one MPIJob replica
// spec: its pod template, with its first container (the one the MPI Operator
// treats as the main one) named "node", the only container the Trainer
// mounts SSH keys and the hostfile into.
func (c *converter) replicatedJob(rs *ReplicaSpec, role, name string, launcherAsWorker bool) (jobsetv1alpha2.ReplicatedJob, error) {
	base := "spec.mpiReplicaSpecs." + role
	tmpl := *rs.Template.DeepCopy()
	main := &tmpl.Spec.Containers[0]
	if main.Name != constants.Node {
		c.note(Differs, base+".template.spec.containers[0].name", "%q → %q: the Trainer mounts the SSH keys (and on the Launcher the hostfile) into the container named node only", main.Name, constants.Node)
		if slices.ContainsFunc(tmpl.Spec.Containers[1:], func(ct corev1.Container) bool { return ct.Name == constants.Node }) {
			return jobsetv1alpha2.ReplicatedJob{}, fmt.Errorf("%s.template.spec.containers: another container than the first is named %q; the Trainer needs that name for the main container", base, constants.Node)
		}
		main.Name = constants.Node
	}
	if role == Worker && len(main.Command) == 0 && len(main.Args) == 0 {
		main.Command = []string{"/usr/sbin/sshd", "-De"}
		c.note(Mapped, base+".template.spec.containers[0].command", "none → [/usr/sbin/sshd -De], the command the MPI Operator gives a Worker without one")
	}
	var kept []corev1.EnvVar
	for _, e := range main.Env {
		if reservedEnv.Has(e.Name) {
			c.note(Differs, base+".template.spec.containers[0].env."+e.Name, "removed: the Trainer sets %s itself on the Launcher and rejects it elsewhere in a TrainJob", e.Name)
			continue
		}
		kept = append(kept, e)
	}
	main.Env = kept
	if role == Launcher && !launcherAsWorker {
		// The MPI Operator hides GPUs from a Launcher that runs no ranks.
		for _, name := range []string{"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"} {
			if !slices.ContainsFunc(main.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
				main.Env = append(main.Env, corev1.EnvVar{Name: name})
			}
		}
		c.note(Mapped, base+".template", "NVIDIA_VISIBLE_DEVICES and NVIDIA_DRIVER_CAPABILITIES set empty on the Launcher, as the MPI Operator does when it runs no ranks")
	}
	restart, err := c.restartPolicy(base, rs.RestartPolicy, role, tmpl.Spec.RestartPolicy)
	if err != nil {
		return jobsetv1alpha2.ReplicatedJob{}, err
	}
	tmpl.Spec.RestartPolicy = restart
	c.note(Mapped, base+".template", "the pod template (resources, volumes, security context, node selection, other containers) → the runtime's %s job, as written", name)
	rj := jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1}
	rj.Template.Spec.Template = tmpl
	return rj, nil
}

// restartPolicy maps a replica spec's restartPolicy onto its pods', which a
// Job accepts as Never or OnFailure only.
func (c *converter) restartPolicy(base, replica, role string, template corev1.RestartPolicy) (corev1.RestartPolicy, error) {
	field := base + ".restartPolicy"
	def := corev1.RestartPolicyNever
	if role == Launcher {
		def = corev1.RestartPolicyOnFailure
	}
	if template != "" && replica == "" {
		replica = string(template)
	}
	switch replica {
	case "":
		return def, nil
	case "Never", "OnFailure":
		c.note(Mapped, field, "%s → the pod template's restartPolicy", replica)
		return corev1.RestartPolicy(replica), nil
	case "ExitCode":
		c.note(Differs, field, "ExitCode → Never (as the MPI Operator sets the pods); the MPI Operator then restarted a Worker that failed with a retryable exit code, the Trainer does not: a failed pod fails its Job")
		return corev1.RestartPolicyNever, nil
	case "Always":
		c.note(Differs, field, "Always → OnFailure: a Job's pods cannot restart always")
		return corev1.RestartPolicyOnFailure, nil
	}
	return "", fmt.Errorf("%s: %q; want Never, OnFailure, ExitCode or Always", field, replica)
}

// scheduling maps runPolicy.schedulingPolicy for the gang scheduler of
// Options; pods is every pod of the job.
func (c *converter) scheduling(rt *trainer.TrainingRuntime, pods int32) error {
	sp := c.job.Spec.RunPolicy.SchedulingPolicy
	gang := c.opts.Gang
	switch gang {
	case GangNone, GangVolcano, GangSchedulerPlugins:
	default:
		return fmt.Errorf("gang scheduler %q: want volcano, scheduler-plugins or none", gang)
	}
	const field = "spec.runPolicy.schedulingPolicy"
	setSchedulerName := func(name string) {
		for i := range rt.Spec.Template.Spec.ReplicatedJobs {
			rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.SchedulerName = name
		}
	}
	switch gang {
	case GangVolcano:
		rt.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Volcano: &trainer.VolcanoPodGroupPolicySource{}}}
		setSchedulerName("volcano")
		c.note(Mapped, "gang scheduling (volcano)", "the runtime's podGroupPolicy.volcano and schedulerName volcano: the Trainer creates one PodGroup of every pod")
	case GangSchedulerPlugins:
		cs := &trainer.CoschedulingPodGroupPolicySource{}
		if sp != nil && sp.ScheduleTimeoutSeconds != nil {
			cs.ScheduleTimeoutSeconds = sp.ScheduleTimeoutSeconds
			c.note(Mapped, field+".scheduleTimeoutSeconds", "%d → the runtime's podGroupPolicy.coscheduling.scheduleTimeoutSeconds", *sp.ScheduleTimeoutSeconds)
		}
		rt.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Coscheduling: cs}}
		setSchedulerName("scheduler-plugins-scheduler")
		c.note(Mapped, "gang scheduling (scheduler-plugins)", "the runtime's podGroupPolicy.coscheduling and schedulerName scheduler-plugins-scheduler")
	}
	if sp == nil {
		return nil
	}
	if sp.Queue != "" {
		switch gang {
		case GangVolcano:
			rt.Spec.Template.Annotations = map[string]string{volcanov1beta1.QueueNameAnnotationKey: sp.Queue}
			c.note(Mapped, field+".queue", "%q → the runtime template's annotation %s, the PodGroup's queue", sp.Queue, volcanov1beta1.QueueNameAnnotationKey)
		default:
			c.note(NoEquivalent, field+".queue", "%q is a Volcano queue: convert with --gang-scheduler=volcano to carry it; with Kueue, label the TrainJob kueue.x-k8s.io/queue-name instead", sp.Queue)
		}
	}
	if sp.MinAvailable != nil {
		if gang != GangNone && *sp.MinAvailable == pods {
			c.note(Mapped, field+".minAvailable", "%d: every pod, which is the Trainer's PodGroup minMember", *sp.MinAvailable)
		} else {
			c.note(NoEquivalent, field+".minAvailable", "%d: the Trainer's PodGroup always waits for every pod (%d)", *sp.MinAvailable, pods)
		}
	}
	if sp.MinResources != nil {
		c.note(NoEquivalent, field+".minResources", "the Trainer computes the PodGroup's minResources from every pod's requests")
	}
	if sp.ScheduleTimeoutSeconds != nil && gang != GangSchedulerPlugins {
		c.note(NoEquivalent, field+".scheduleTimeoutSeconds", "%d: only scheduler-plugins' coscheduling has a schedule timeout (--gang-scheduler=scheduler-plugins)", *sp.ScheduleTimeoutSeconds)
	}
	if sp.PriorityClass != "" {
		if gang == GangNone {
			c.note(NoEquivalent, field+".priorityClass", "%q: the MPI Operator gives it to the gang's PodGroup only, and without a gang scheduler ignores it; set priorityClassName in the pod templates for a priority", sp.PriorityClass)
		} else {
			var set []string
			for i := range rt.Spec.Template.Spec.ReplicatedJobs {
				ps := &rt.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec
				if ps.PriorityClassName == "" {
					ps.PriorityClassName = sp.PriorityClass
					set = append(set, rt.Spec.Template.Spec.ReplicatedJobs[i].Name)
				}
			}
			c.note(Differs, field+".priorityClass", "%q → priorityClassName of the %s pods: the MPI Operator gave it to the PodGroup; the Trainer's PodGroup has none, so the pods carry it", sp.PriorityClass, strings.Join(set, " and "))
		}
	}
	return nil
}

// onCurated points the TrainJob at the curated runtime rt that fits the
// MPIJob (curatedFit) and carries in the TrainJob what the runtime leaves
// to it: the Launcher's image, command and args, the resources and env of
// every node.
func (c *converter) onCurated(tj *trainer.TrainJob, rt *trainer.ClusterTrainingRuntime, workers int32) {
	launcher := c.job.Spec.MPIReplicaSpecs[Launcher].Template.Spec.Containers[0]
	tj.Spec.RuntimeRef.Kind = ptr.To(trainer.ClusterTrainingRuntimeKind)
	tj.Spec.RuntimeRef.Name = rt.Name
	if len(launcher.Resources.Limits)+len(launcher.Resources.Requests) > 0 {
		tj.Spec.Trainer.ResourcesPerNode = launcher.Resources.DeepCopy()
	}
	tj.Spec.Trainer.Env = launcher.Env
	// The curated launcher has args of its own, which a TrainJob without
	// args keeps: the Launcher's whole command line goes into the TrainJob,
	// its first word as the command, the rest as args (curatedFit checked
	// there is a rest).
	argv := append(slices.Clone(launcher.Command), launcher.Args...)
	tj.Spec.Trainer.Command, tj.Spec.Trainer.Args = argv[:1], argv[1:]
	c.note(Mapped, "runtime", "the curated ClusterTrainingRuntime %s fits: the Launcher is a node, the Workers run its image %s and sshd, the pod templates hold nothing else; no TrainingRuntime is written", rt.Name, nodeContainer(rt, constants.Node).Image)
	c.note(Mapped, "spec.mpiReplicaSpecs.*.template.spec.containers[0].resources", "→ TrainJob spec.trainer.resourcesPerNode: the Launcher and each of the %d Workers", workers)
	c.note(Mapped, "spec.launcherCreationPolicy", "WaitForWorkersReady: the curated runtime's launcher job dependsOn its Workers being Ready")
	if len(launcher.Command) > 0 {
		c.note(Differs, "spec.mpiReplicaSpecs.Launcher.template.spec.containers[0].command", "→ TrainJob spec.trainer.command, which replaces the curated launcher's script (it waits for every host to resolve and runs mpirun --hostfile over all slots): to keep the script, give the program alone in spec.trainer.args")
	}
	c.note(Differs, "pods", "the curated runtime's pod templates add a restricted security context, an sshd readiness probe and the Istio opt-out labels (runtimes.md)")
}
