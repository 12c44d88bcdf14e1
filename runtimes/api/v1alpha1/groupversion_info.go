// Package v1alpha1 holds mpiguard's runtime API types (group mpiguard.io).
// +kubebuilder:object:generate=true
// +groupName=mpiguard.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of mpiguard's runtime types.
	GroupVersion = schema.GroupVersion{Group: "mpiguard.io", Version: "v1alpha1"}
	// SchemeBuilder registers the types with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}
	// AddToScheme adds the types in this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
