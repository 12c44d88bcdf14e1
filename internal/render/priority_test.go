package render

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// admitPriority is the Priority admission plugin on a new pod.
func TestAdmitPriorityAsThePriorityPlugin(t *testing.T) {
	class := func(name string, value int32, globalDefault bool) schedulingv1.PriorityClass {
		return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault}
	}
	cases := map[string]struct {
		classes []schedulingv1.PriorityClass
		named   string
		want    string // the pod's class after admission
		problem string
	}{
		"no classes known: taken as named":              {named: "missing", want: "missing"},
		"the globalDefault class for a pod naming none": {classes: []schedulingv1.PriorityClass{class("low", 10, false), class("batch", 100, true)}, want: "batch"},
		"the lowest of two globalDefault classes":       {classes: []schedulingv1.PriorityClass{class("b", 100, true), class("a", 50, true)}, want: "a"},
		"no globalDefault: none":                        {classes: []schedulingv1.PriorityClass{class("low", 10, false)}},
		"a class that exists":                           {classes: []schedulingv1.PriorityClass{class("high", 1000, false)}, named: "high", want: "high"},
		"a class that does not exist":                   {classes: []schedulingv1.PriorityClass{class("high", 1000, true)}, named: "urgent", want: "urgent", problem: "no PriorityClass with name urgent was found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := newAdmissionContext(nil, nil).withPriorityClasses(tc.classes)
			pod := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: tc.named}}
			errs := a.admitPriority(pod, field.NewPath("spec"))
			expectAdmitted(t, pod.Spec.PriorityClassName, tc.want, errs, "spec.priorityClassName", tc.problem)
		})
	}
}
