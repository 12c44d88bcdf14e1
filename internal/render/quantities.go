package render

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kubernetes represents no quantity larger than 2^63-1 in magnitude (its API
// reference, "Quantity"), yet it parses "1e10000000" into one, the CRDs'
// quantity pattern lets it into a TrainJob or a runtime, and exact
// arithmetic on it (a sum of requests, a product with a pod count, the
// policies' exact numbers) builds numbers of ten million digits: `mpiguard
// check` of one such TrainJob ran over a minute and grew past 300 MB
// without an answer. At admission any tenant could make every replica spend
// that, long past the apiserver's timeout. Render refuses such a quantity
// before anything computes with it, naming its field.
const maxQuantity = 0x1p63 // 2^63; float64 has no 2^63-1, and Kubernetes caps "8Ei" at it

var quantityType = reflect.TypeFor[resource.Quantity]()

// QuantityTooLarge says q is larger in magnitude than Kubernetes quantities
// may be: no reader may compute with it. AsApproximateFloat64 reads the
// quantity's digits and exponent without computing its value (+Inf for
// "1e10000000", in microseconds).
func QuantityTooLarge(q resource.Quantity) bool {
	f := q.AsApproximateFloat64()
	return math.IsNaN(f) || math.Abs(f) > maxQuantity
}

// checkQuantities returns an error naming the first quantity in obj (a
// TrainJob's or runtime's spec, whose path is root) that is larger than
// Kubernetes quantities may be; what names the object in the message.
func checkQuantities(what string, root *field.Path, obj any) error {
	var path []segment
	q := firstTooLarge(reflect.ValueOf(obj), &path)
	if q == nil {
		return nil
	}
	p := root
	for _, s := range path {
		p = s.child(p)
	}
	return fmt.Errorf("render: %s: %w", what, field.Invalid(p, q.String(),
		"larger than Kubernetes quantities may be (at most 2^63-1, about 9.2e18 in magnitude): give the amount the job needs"))
}

// checkRuntimeQuantities is checkQuantities for the runtime a job renders
// with, once per runtime version: key names the version (runtimeCacheKey;
// "" for a runtime without UID and resourceVersion, checked every time), the
// same key the template cache trusts to name one spec.
func (r *Renderer) checkRuntimeQuantities(key string, rt client.Object, spec *trainer.TrainingRuntimeSpec) error {
	if key != "" {
		if _, ok := r.runtimesChecked.Get(key); ok {
			return nil
		}
	}
	if err := checkQuantities(rt.GetObjectKind().GroupVersionKind().Kind+" "+rt.GetName(), field.NewPath("spec"), spec); err != nil {
		return err
	}
	if key != "" {
		r.runtimesChecked.Add(key, struct{}{})
	}
	return nil
}

// segment is one step of a field path, formatted only for the message.
type segment struct {
	name  string // a field's JSON name
	index int    // a list index, when name and key are empty
	key   string // a map key
	isKey bool
}

func (s segment) child(p *field.Path) *field.Path {
	switch {
	case s.isKey:
		return p.Key(s.key)
	case s.name != "":
		return p.Child(s.name)
	}
	return p.Index(s.index)
}

// firstTooLarge walks v depth-first and returns the first quantity larger
// than Kubernetes quantities may be, with path leading to it; nil when there
// is none.
func firstTooLarge(v reflect.Value, path *[]segment) *resource.Quantity {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return firstTooLarge(v.Elem(), path)
	case reflect.Struct:
		if v.Type() == quantityType {
			if q := v.Interface().(resource.Quantity); QuantityTooLarge(q) {
				return &q
			}
			return nil
		}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, inline := jsonName(f)
			if !inline {
				*path = append(*path, segment{name: name})
			}
			if q := firstTooLarge(v.Field(i), path); q != nil {
				return q
			}
			if !inline {
				*path = (*path)[:len(*path)-1]
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // bytes
		}
		for i := range v.Len() {
			*path = append(*path, segment{index: i})
			if q := firstTooLarge(v.Index(i), path); q != nil {
				return q
			}
			*path = (*path)[:len(*path)-1]
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := iter.Key()
			var key string
			if k.Kind() == reflect.String {
				key = k.String()
			} else {
				key = fmt.Sprint(k.Interface())
			}
			*path = append(*path, segment{key: key, isKey: true})
			if q := firstTooLarge(iter.Value(), path); q != nil {
				return q
			}
			*path = (*path)[:len(*path)-1]
		}
	}
	return nil
}

// jsonName is a struct field's name in JSON, and whether its fields are
// inlined into its parent's (an embedded struct, or `json:",inline"`).
func jsonName(f reflect.StructField) (string, bool) {
	name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" && (f.Anonymous || opts == "inline") {
		return "", true
	}
	if name == "" || name == "-" {
		return f.Name, false
	}
	return name, false
}
