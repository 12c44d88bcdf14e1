// Package v1alpha1 is mpiguard's API group mpiguard.io/v1alpha1, every type
// of it in one package (one scheme registration, one generated deepcopy):
//
//   - QuotaReservation (quotareservation_types.go), through which every
//     mpiguard replica records, with the apiserver's optimistic concurrency,
//     the quota it has promised to admitted TrainJobs whose pods do not
//     exist yet (internal/reservations);
//   - RuntimeTest (runtimetest_types.go), the smoke test that proves a
//     runtime works (runtimes/smoketest).
//
// It lives with the quota reservations, the group's first and most used
// types; it imports apimachinery only, so it stays cheap to import.
// +kubebuilder:object:generate=true
// +groupName=mpiguard.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of mpiguard's types.
	GroupVersion = schema.GroupVersion{Group: "mpiguard.io", Version: "v1alpha1"}
	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types in this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &QuotaReservation{}, &QuotaReservationList{}, &RuntimeTest{}, &RuntimeTestList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
