package scheme

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var metav1PkgPath = reflect.TypeFor[metav1.ListOptions]().PkgPath()

// The mpiguard.io API group is declared by one Go package: every kind of it
// in the scheme comes from there, so a new kind cannot start a second
// package (two registrations, two generated deepcopies) unnoticed.
func TestMpiguardGroupIsOnePackage(t *testing.T) {
	kinds, packages := map[string]bool{}, map[string]bool{}
	for gvk, typ := range New().AllKnownTypes() {
		// metav1.AddToGroupVersion adds the options and watch event kinds
		// of every group: apimachinery's, not the group's own.
		if gvk.Group != "mpiguard.io" || typ.PkgPath() == metav1PkgPath {
			continue
		}
		kinds[gvk.Kind] = true
		packages[typ.PkgPath()] = true
	}
	if diff := cmp.Diff([]string{"github.com/mpiguard/mpiguard/api/v1alpha1"}, slices.Sorted(maps.Keys(packages))); diff != "" {
		t.Errorf("packages of the mpiguard.io kinds (-want +got):\n%s", diff)
	}
	for _, kind := range []string{"QuotaReservation", "QuotaReservationList", "RuntimeTest", "RuntimeTestList"} {
		if !kinds[kind] {
			t.Errorf("kind %s of mpiguard.io is not in the scheme", kind)
		}
	}
}
