// Package v1alpha1 holds mpiguard's runtime API types (group mpiguard.io).
// +kubebuilder:object:generate=true
// +groupName=mpiguard.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of mpiguard's runtime types.
	GroupVersion = schema.GroupVersion{Group: "mpiguard.io", Version: "v1alpha1"}
	// SchemeBuilder registers the types with a scheme (apimachinery only, so the
	// API package stays cheap to import).
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types in this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &RuntimeTest{}, &RuntimeTestList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
