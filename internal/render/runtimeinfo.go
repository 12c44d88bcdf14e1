package render

import (
	"maps"

	"github.com/huandu/go-clone"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	jobsetv1alpha2ac "sigs.k8s.io/jobset/client-go/applyconfiguration/jobset/v1alpha2"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/apply"
	"github.com/kubeflow/trainer/v2/pkg/constants"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	trainingruntimeutil "github.com/kubeflow/trainer/v2/pkg/util/trainingruntime"
)

// runtimeInfo is the Trainer v2.3.0's TrainingRuntime.RuntimeInfo
// (pkg/runtime/core/trainingruntime.go): build the runtime info from the
// runtime template with the TrainJob's runtime patches merged in, then run the
// Trainer's EnforceMLPolicy, EnforcePodGroupPolicy and PodNetwork plugins on it.
//
// It is the Trainer's code with one difference: the two expensive conversions
// that depend only on the runtime and the patches — the strategic merge of the
// patches, and the typed-to-apply-configuration conversion (a JSON round trip
// through unstructured) — come from the template cache, and each render gets
// its own deep copy. Everything that depends on the TrainJob (numNodes,
// resourcesPerNode merged key by key into the node container, the plugins) runs
// per render exactly as in the Trainer. TestRuntimeInfoMatchesTheTrainer
// compares the objects built from it with those built from the Trainer's own
// RuntimeInfo on every TestRender input (cached, uncached, and after another
// job's render), and the fidelity suite (test/integration/render) compares
// renders with what the real Trainer controller creates.
func (r *Renderer) runtimeInfo(runtimeKey string, trainJob *trainer.TrainJob, spec *trainer.TrainingRuntimeSpec) (*trainerruntime.Info, error) {
	template := spec.Template
	propagationLabels := maps.Clone(template.Labels)
	propagationAnnotations := maps.Clone(template.Annotations)
	for _, patch := range trainJob.Spec.RuntimePatches {
		if patch.TrainingRuntimeSpec != nil && patch.TrainingRuntimeSpec.Template != nil && patch.TrainingRuntimeSpec.Template.Metadata != nil {
			if propagationLabels == nil && len(patch.TrainingRuntimeSpec.Template.Metadata.Labels) > 0 {
				propagationLabels = make(map[string]string)
			}
			maps.Copy(propagationLabels, patch.TrainingRuntimeSpec.Template.Metadata.Labels)
			if propagationAnnotations == nil && len(patch.TrainingRuntimeSpec.Template.Metadata.Annotations) > 0 {
				propagationAnnotations = make(map[string]string)
			}
			maps.Copy(propagationAnnotations, patch.TrainingRuntimeSpec.Template.Metadata.Annotations)
		}
	}

	merged, err := r.templates.get(runtimeKey, trainJob, template.Spec)
	if err != nil {
		return nil, err
	}
	jobSetSpecApply := clone.Clone(merged.apply).(*jobsetv1alpha2ac.JobSetSpecApplyConfiguration)
	mlPolicy := spec.MLPolicy

	opts := []trainerruntime.InfoOption{
		trainerruntime.WithLabels(propagationLabels),
		trainerruntime.WithAnnotations(propagationAnnotations),
		trainerruntime.WithMLPolicySource(mlPolicy),
		trainerruntime.WithPodGroupPolicy(spec.PodGroupPolicy),
		trainerruntime.WithTemplateSpecObjApply(jobSetSpecApply),
	}
	for i, rJob := range jobSetSpecApply.ReplicatedJobs {
		count := ptr.Deref(rJob.Template.Spec.Parallelism, 1)
		var ancestor *string
		if metadata := rJob.Template.ObjectMetaApplyConfiguration; metadata != nil && metadata.Labels != nil {
			if labelAncestor, ok := metadata.Labels[constants.LabelTrainJobAncestor]; ok {
				if labelAncestor == constants.AncestorTrainer && mlPolicy != nil {
					count = ptr.Deref(mlPolicy.NumNodes, 1)
				}
				ancestor = &labelAncestor
			}
		}
		// The typed pod spec the Trainer hands to the PodSet: a copy of the
		// merged template's, with the node container's merged resources.
		podSpec := merged.typed.ReplicatedJobs[i].Template.Spec.Template.Spec.DeepCopy()
		if trainJob.Spec.Trainer != nil && trainJob.Spec.Trainer.ResourcesPerNode != nil {
			isTrainerAncestor := ancestor != nil && *ancestor == constants.AncestorTrainer && mlPolicy != nil
			isMPILauncherAsNode := mlPolicy != nil && mlPolicy.MPI != nil &&
				ptr.Deref(mlPolicy.MPI.RunLauncherAsNode, false) && *rJob.Name == constants.Node
			if isTrainerAncestor || isMPILauncherAsNode {
				if err := mergeNodeResources(jobSetSpecApply.ReplicatedJobs[i].Template.Spec.Template.Spec, podSpec, *trainJob.Spec.Trainer.ResourcesPerNode); err != nil {
					return nil, err
				}
			}
		}
		opts = append(opts, trainerruntime.WithPodSet(*rJob.Name, ancestor, count, *podSpec, rJob.Template.Spec.Template.Spec))
	}

	info := trainerruntime.NewInfo(opts...)
	if err := r.framework.RunEnforceMLPolicyPlugins(info, trainJob); err != nil {
		return nil, err
	}
	if err := r.framework.RunEnforcePodGroupPolicyPlugins(info, trainJob); err != nil {
		return nil, err
	}
	if err := r.framework.RunPodNetworkPlugins(info, trainJob); err != nil {
		return nil, err
	}
	return info, nil
}

// mergeNodeResources merges resourcesPerNode key by key into the node
// container's resources, in the apply configuration and in the typed pod spec,
// as the Trainer does since v2.3.
func mergeNodeResources(applyPodSpec *corev1ac.PodSpecApplyConfiguration, podSpec *corev1.PodSpec, perNode corev1.ResourceRequirements) error {
	if applyPodSpec == nil {
		return nil
	}
	for k := range applyPodSpec.Containers {
		if ptr.Deref(applyPodSpec.Containers[k].Name, "") != constants.Node {
			continue
		}
		var baseRes corev1.ResourceRequirements
		if r := applyPodSpec.Containers[k].Resources; r != nil {
			if r.Limits != nil {
				baseRes.Limits = *r.Limits
			}
			if r.Requests != nil {
				baseRes.Requests = *r.Requests
			}
		}
		mergedRes, err := trainingruntimeutil.MergeResourceRequirements(baseRes, perNode)
		if err != nil {
			return err
		}
		applyRes := &corev1ac.ResourceRequirementsApplyConfiguration{}
		if mergedRes.Limits != nil {
			limits := maps.Clone(mergedRes.Limits)
			applyRes.Limits = &limits
		}
		if mergedRes.Requests != nil {
			requests := maps.Clone(mergedRes.Requests)
			applyRes.Requests = &requests
		}
		applyPodSpec.Containers[k].Resources = applyRes
		podSpec.Containers[k].Resources = mergedRes
		return nil
	}
	return nil
}

// mergedTemplate is a runtime template with a TrainJob's runtime patches merged
// in, typed and as the apply configuration the Trainer builds from it. Shared
// between renders: never modified.
type mergedTemplate struct {
	typed jobsetv1alpha2.JobSetSpec
	apply *jobsetv1alpha2ac.JobSetSpecApplyConfiguration
}

// newMergedTemplate merges the patches into spec and converts the result as
// the Trainer does (apply.FromTypedObjWithFields on a JobSet holding the spec).
func newMergedTemplate(spec jobsetv1alpha2.JobSetSpec, patches [][]byte) (*mergedTemplate, error) {
	spec = *spec.DeepCopy()
	if len(patches) > 0 {
		var err error
		if spec, err = mergeRuntimePatches(spec, patches); err != nil {
			return nil, err
		}
	}
	ac, err := apply.FromTypedObjWithFields[jobsetv1alpha2ac.JobSetSpecApplyConfiguration](&jobsetv1alpha2.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: jobsetv1alpha2.GroupVersion.String(), Kind: "JobSet"},
		Spec:     spec,
	}, "spec")
	if err != nil {
		return nil, err
	}
	return &mergedTemplate{typed: spec, apply: ac}, nil
}
