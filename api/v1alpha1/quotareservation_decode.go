package v1alpha1

import (
	"encoding/json"
	"fmt"

	kjson "sigs.k8s.io/json"
)

// UnmarshalJSON decodes a spec and keeps in it, rather than returns, an
// error in its content. spec.entries has no schema in the CRD (its cost,
// quotareservation_types.go), so the apiserver stores whatever a hand edit
// puts there, a string where a pod count belongs included. Returned, that
// error would fail every list of QuotaReservations (one response holds every
// object) and end every watch at the object's event, and with them
// mpiguard's informer in every namespace: quota would stay held everywhere.
// Kept, it fails only the readers of its own object, which look at
// DecodeError first (store.CheckReadable in internal/reservations/store). Malformed JSON is still returned: the
// apiserver never stores any.
//
// The decoder is the one the apiserver's clients use for JSON
// (case-sensitive field names, integers kept as int64 in untyped fields).
// It costs a decode two more scans of the spec's bytes, far less than the
// apiserver's validation of every entry on every write that the schema it
// replaces would cost.
func (s *QuotaReservationSpec) UnmarshalJSON(data []byte) error {
	type spec QuotaReservationSpec // the same fields, without this method (the name is in the decoder's messages)
	var out spec
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &out); err != nil {
		if syntax, _ := kjson.SyntaxErrorOffset(err); syntax {
			return err
		}
		out = spec{DecodeError: locate(data, err)} // nothing half-decoded to read by mistake
	}
	*s = QuotaReservationSpec(out)
	return nil
}

// SpecDecodeError says where a stored spec fails to decode and why. Plain
// strings: the spec's generated deepcopy copies it by value.
// +kubebuilder:object:generate=false
type SpecDecodeError struct {
	// Field is spec.entries[i] when entry i does not decode by itself,
	// else spec.
	Field string
	// Message is the decoder's.
	Message string
}

func (e *SpecDecodeError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Message) }

// locate names the first entry that does not decode by itself, so an admin
// finds it among hundreds; else the whole spec, with err.
func locate(data []byte, err error) *SpecDecodeError {
	var raw struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if kjson.UnmarshalCaseSensitivePreserveInts(data, &raw) == nil {
		for i, e := range raw.Entries {
			var entry ReservationEntry
			if entryErr := kjson.UnmarshalCaseSensitivePreserveInts(e, &entry); entryErr != nil {
				return &SpecDecodeError{Field: fmt.Sprintf("spec.entries[%d]", i), Message: entryErr.Error()}
			}
		}
	}
	return &SpecDecodeError{Field: "spec", Message: err.Error()}
}
