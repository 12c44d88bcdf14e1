package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Decoding a quantity costs apimachinery's parser (resource.ParseQuantity)
// time that grows with its exponent and digits, and the CRDs' quantity
// pattern lets "1e-2147483647" into a TrainJob's resources, where every typed decoder (the webhooks',
// their informers', the Trainer's, `mpiguard check`'s) would spend hours on
// it. So what mpiguard decodes from a request or a file is read untyped
// first (its strings unescaped, nothing parsed as a quantity), and a string
// no quantity Kubernetes represents can be (at most 2^63-1 with nano
// precision) but that would take a parser this long is refused, naming its
// field, before the typed decode.
const (
	maxQuantityExponent = 999 // "1e-999" parses in microseconds; Kubernetes needs at most 18
	maxQuantityDigits   = 300 // digits before any suffix
)

// ScreenQuantities refuses raw (a JSON object) when a string in it would
// cost a quantity parser minutes; malformed JSON is left to the decoder.
func ScreenQuantities(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj any
	if dec.Decode(&obj) != nil {
		return nil // the typed decode says what is wrong
	}
	var path []any
	if s, found := firstSlowQuantity(obj, &path); found {
		p := field.NewPath("")
		for i, step := range path {
			switch v := step.(type) {
			case string:
				switch {
				case i == 0:
					p = field.NewPath(v)
				case strings.ContainsAny(v, "./"): // a resource name
					p = p.Key(v)
				default:
					p = p.Child(v)
				}
			case int:
				p = p.Index(v)
			}
		}
		shown := s
		if len(shown) > 40 {
			shown = shown[:40] + "..."
		}
		return field.Invalid(p, shown, fmt.Sprintf(
			"a quantity with more than %d digits or an exponent beyond ±%d, which Kubernetes cannot represent (at most 2^63-1, nano precision) and whose decoding takes minutes: give the amount as a plain number (8, 500m, 32Gi)",
			maxQuantityDigits, maxQuantityExponent))
	}
	return nil
}

// firstSlowQuantity walks a decoded JSON value depth-first for a slow
// quantity string, with path (keys and indexes) leading to it.
func firstSlowQuantity(v any, path *[]any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, slowQuantity(t)
	case json.Number: // a quantity may be written as a number, too
		return string(t), slowQuantity(string(t))
	case map[string]any:
		for k, e := range t {
			*path = append(*path, k)
			if s, found := firstSlowQuantity(e, path); found {
				return s, true
			}
			*path = (*path)[:len(*path)-1]
		}
	case []any:
		for i, e := range t {
			*path = append(*path, i)
			if s, found := firstSlowQuantity(e, path); found {
				return s, true
			}
			*path = (*path)[:len(*path)-1]
		}
	}
	return "", false
}

// slowQuantity says s is written as a quantity (sign, digits with at most
// one point, then a suffix) with too many digits or too large an exponent.
// Other strings, and quantities Kubernetes can hold, are not.
func slowQuantity(s string) bool {
	if len(s) <= 5 {
		return false
	}
	num := strings.TrimLeft(s, "+-")
	end := strings.IndexFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if end < 0 {
		end = len(num)
	}
	if end == 0 || strings.Count(num[:end], ".") > 1 {
		return false
	}
	if end > maxQuantityDigits {
		return true
	}
	suffix := num[end:]
	if len(suffix) < 2 || (suffix[0] != 'e' && suffix[0] != 'E') {
		return false
	}
	exp := strings.TrimLeft(strings.TrimLeft(suffix[1:], "+-"), "0")
	if exp == "" || strings.IndexFunc(exp, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return false
	}
	n, err := strconv.Atoi(exp)
	return err != nil || n > maxQuantityExponent
}
