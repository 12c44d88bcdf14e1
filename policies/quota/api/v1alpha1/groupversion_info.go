// Package v1alpha1 holds mpiguard's quota reservation API (group mpiguard.io):
// the QuotaReservation object through which every mpiguard replica records,
// with the apiserver's optimistic concurrency, the quota it has promised to
// admitted TrainJobs whose pods do not exist yet.
// +kubebuilder:object:generate=true
// +groupName=mpiguard.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of the quota reservation types.
	GroupVersion = schema.GroupVersion{Group: "mpiguard.io", Version: "v1alpha1"}
	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types in this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &QuotaReservation{}, &QuotaReservationList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
