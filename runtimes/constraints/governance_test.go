package constraints

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseGovernance(t *testing.T) {
	i32 := func(n int32) *int32 { return &n }
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		want    map[string]any // PolicyInput without "errors"
		wantErr string
	}{
		{"every governance constraint", map[string]string{
			AnnotationAllowedPriorityClasses: "ml-low, ml-high", AnnotationDefaultPriorityClass: "ml-low",
			AnnotationGangScheduleTimeoutSeconds: "60-600", AnnotationGangMinAvailable: "all"},
			map[string]any{"allowedPriorityClasses": []any{"ml-low", "ml-high"}, "defaultPriorityClass": "ml-low",
				"gangScheduleTimeoutSeconds": map[string]any{"min": int64(60), "max": int64(600)}, "gangMinAvailable": "all"}, ""},
		{"open ranges and a count", map[string]string{AnnotationGangScheduleTimeoutSeconds: "-300", AnnotationGangMinAvailable: " 4 "},
			map[string]any{"gangScheduleTimeoutSeconds": map[string]any{"max": int64(300)}, "gangMinAvailable": int64(4)}, ""},
		{"an exact timeout", map[string]string{AnnotationGangScheduleTimeoutSeconds: "120"},
			map[string]any{"gangScheduleTimeoutSeconds": map[string]any{"min": int64(120), "max": int64(120)}}, ""},
		{"a default that is not allowed", map[string]string{AnnotationAllowedPriorityClasses: "ml-high", AnnotationDefaultPriorityClass: "ml-low"},
			map[string]any{"allowedPriorityClasses": []any{"ml-high"}}, "the default must be allowed"},
		{"a reversed range", map[string]string{AnnotationGangScheduleTimeoutSeconds: "600-60"}, map[string]any{}, "the minimum 600 is above the maximum 60"},
		{"no bound", map[string]string{AnnotationGangScheduleTimeoutSeconds: "-"}, map[string]any{}, "\"MIN-MAX\""},
		{"zero seconds", map[string]string{AnnotationGangScheduleTimeoutSeconds: "0-60"}, map[string]any{}, "at least 1"},
		{"min available some", map[string]string{AnnotationGangMinAvailable: "some"}, map[string]any{}, "\"all\""},
		{"a bad class name", map[string]string{AnnotationAllowedPriorityClasses: "ML_High"}, map[string]any{}, "not a priority class name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PolicyInput(tc.ann)
			errs := got["errors"].([]any)
			delete(got, "errors")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("policy input (-want +got):\n%s", diff)
			}
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("errors %v", errs)
			case tc.wantErr != "" && (len(errs) == 0 || !strings.Contains(errs[0].(string), tc.wantErr)):
				t.Errorf("errors %v, want one containing %q", errs, tc.wantErr)
			}
			c, _ := Parse(tc.ann)
			if r := c.GangScheduleTimeoutSeconds; r != nil && tc.name == "an exact timeout" && (*r.Min != *i32(120) || *r.Max != 120) {
				t.Errorf("range %+v", r)
			}
		})
	}
}
