package store

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/api/v1alpha1"
	"github.com/mpiguard/mpiguard/internal/render"
)

// ReasonInvalidEntries is the Warning Event on a QuotaReservation whose
// entries are not as mpiguard writes them (InvalidError).
const ReasonInvalidEntries = "InvalidEntries"

// InvalidError says a QuotaReservation's entries are not as mpiguard writes
// them: a value that does not decode (spec.DecodeError), or one that does
// but is wrong (validEntries). Only a hand edit makes either: the CRD keeps
// no schema for the entries.
type InvalidError struct {
	Key  client.ObjectKey
	Errs field.ErrorList
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("QuotaReservation %s is not as mpiguard writes it (%v); only mpiguard writes it, so it was edited by hand: correct those fields (kubectl edit quotareservation -n %s %s), or remove the entry, whose TrainJob then holds no quota until its pods exist",
		e.Key, e.Errs.ToAggregate(), e.Key.Namespace, e.Key.Name)
}

// CheckReadable returns the *InvalidError that keeps mpiguard from reading
// res, nil when it can.
func CheckReadable(res *v1alpha1.QuotaReservation) error {
	if d := res.Spec.DecodeError; d != nil {
		// A value of the wrong type where the CRD keeps no schema.
		return &InvalidError{Key: client.ObjectKeyFromObject(res), Errs: field.ErrorList{
			{Type: field.ErrorTypeInvalid, Field: d.Field, BadValue: field.OmitValueType{}, Detail: d.Message},
		}}
	}
	if errs := validEntries(res); len(errs) > 0 {
		return &InvalidError{Key: client.ObjectKeyFromObject(res), Errs: errs}
	}
	return nil
}

// validEntries checks, of res as stored (parts refer to shapes by index),
// what a schema would check of its entries (the CRD keeps none for them,
// quotareservation_types.go) and what one cannot: that every shape index is
// in its table, and that no amount, in an entry or a table, is negative. What
// decodes but is wrong would charge a wrong amount, so it is refused here,
// never read as zero.
func validEntries(res *v1alpha1.QuotaReservation) field.ErrorList {
	var errs field.ErrorList
	entries := field.NewPath("spec", "entries")
	for i := range res.Spec.Entries {
		e, path := &res.Spec.Entries[i], entries.Index(i)
		if e.TrainJob == "" {
			errs = append(errs, field.Required(path.Child("trainJob"), ""))
		}
		if e.Operation != v1alpha1.OperationCreate && e.Operation != v1alpha1.OperationUpdate {
			errs = append(errs, field.NotSupported(path.Child("operation"), e.Operation, []string{v1alpha1.OperationCreate, v1alpha1.OperationUpdate}))
		}
		if e.AdmittedAt.IsZero() {
			errs = append(errs, field.Required(path.Child("admittedAt"), ""))
		}
		if e.HoldUntil.IsZero() {
			errs = append(errs, field.Required(path.Child("holdUntil"), ""))
		}
		for j := range e.Parts {
			errs = append(errs, validPart(res, &e.Parts[j], path.Child("parts").Index(j))...)
		}
	}
	// The shape tables and spec.uncounted have a schema, which allows any
	// quantity: a negative amount there, as in a part, would give quota
	// back (FuzzReadReservation found it in the tables).
	for i := range res.Spec.PodShapes {
		errs = append(errs, nonNegative(res.Spec.PodShapes[i].PerPod, field.NewPath("spec", "podShapes").Index(i).Child("perPod"))...)
	}
	for i := range res.Spec.ObjectShapes {
		errs = append(errs, nonNegative(res.Spec.ObjectShapes[i], field.NewPath("spec", "objectShapes").Index(i))...)
	}
	for i := range res.Spec.Uncounted {
		errs = append(errs, nonNegative(res.Spec.Uncounted[i].Usage, field.NewPath("spec", "uncounted").Index(i).Child("usage"))...)
	}
	return errs
}

func validPart(res *v1alpha1.QuotaReservation, p *v1alpha1.ReservedPart, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p.Pods < 0 {
		errs = append(errs, field.Invalid(path.Child("pods"), p.Pods, "must be at least 0"))
	}
	if p.Jobs < 0 {
		errs = append(errs, field.Invalid(path.Child("jobs"), p.Jobs, "must be at least 0"))
	}
	if p.Shape != nil && (*p.Shape < 0 || int(*p.Shape) >= len(res.Spec.PodShapes)) {
		errs = append(errs, field.Invalid(path.Child("shape"), *p.Shape, fmt.Sprintf("must be an index of spec.podShapes (%d)", len(res.Spec.PodShapes))))
	}
	if p.ObjectsShape != nil && (*p.ObjectsShape < 0 || int(*p.ObjectsShape) >= len(res.Spec.ObjectShapes)) {
		errs = append(errs, field.Invalid(path.Child("objectsShape"), *p.ObjectsShape, fmt.Sprintf("must be an index of spec.objectShapes (%d)", len(res.Spec.ObjectShapes))))
	}
	return errs
}

// nonNegative refuses a negative amount, which would give quota back, and
// one larger than Kubernetes quantities may be, which every reader's exact
// arithmetic would spend minutes on (render.QuantityTooLarge). Every quota
// decision reads every entry, so nothing is allocated unless an amount is
// refused (then the names are sorted, for a stable message).
func nonNegative(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var refused []corev1.ResourceName
	for name, q := range list {
		if q.Sign() < 0 || render.QuantityTooLarge(q) {
			refused = append(refused, name)
		}
	}
	slices.Sort(refused)
	var errs field.ErrorList
	for _, name := range refused {
		q := list[name]
		detail := "must not be negative"
		if render.QuantityTooLarge(q) {
			detail = "must be at most 2^63-1 in magnitude, the largest quantity Kubernetes represents"
		}
		errs = append(errs, field.Invalid(path.Key(string(name)), q.String(), detail))
	}
	return errs
}
