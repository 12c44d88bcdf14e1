package v1alpha1

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// good is an entry as mpiguard writes it.
const good = `{"trainJob":"a","operation":"CREATE","admittedAt":"2026-11-27T03:00:00Z","holdUntil":"2026-11-27T03:01:00Z","parts":[{"replicatedJob":"node","pods":2,"shape":0}]}`

// A spec that does not decode keeps the error, naming the entry at fault,
// instead of failing the decode of its object.
func TestSpecKeepsItsDecodeError(t *testing.T) {
	for _, tt := range []struct {
		name, spec string
		want       *SpecDecodeError // its Message is matched by substring
	}{
		{name: "as mpiguard writes it", spec: `{"namespace":"team-a","entries":[` + good + `]}`},
		{
			name: "a string for a pod count",
			spec: `{"namespace":"team-a","entries":[` + good + `,` + strings.Replace(good, `"pods":2`, `"pods":"two"`, 1) + `]}`,
			want: &SpecDecodeError{Field: "spec.entries[1]", Message: "parts.pods"},
		},
		{
			name: "a time that is none",
			spec: `{"namespace":"team-a","entries":[` + strings.Replace(good, `"2026-11-27T03:00:00Z"`, `"soon"`, 1) + `]}`,
			want: &SpecDecodeError{Field: "spec.entries[0]", Message: "soon"},
		},
		{
			name: "entries not a list",
			spec: `{"namespace":"team-a","entries":{"a":1}}`,
			want: &SpecDecodeError{Field: "spec", Message: "entries"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s QuotaReservationSpec
			if err := s.UnmarshalJSON([]byte(tt.spec)); err != nil {
				t.Fatalf("UnmarshalJSON returned %v; the error belongs in the spec", err)
			}
			got := s.DecodeError
			if tt.want == nil {
				if got != nil {
					t.Fatalf("DecodeError = %v, want none", got)
				}
				if s.Namespace != "team-a" || len(s.Entries) != 1 || s.Entries[0].Parts[0].Pods != 2 {
					t.Errorf("decoded %+v", s)
				}
				return
			}
			if got == nil || got.Field != tt.want.Field || !strings.Contains(got.Message, tt.want.Message) {
				t.Fatalf("DecodeError = %v, want field %s and a message naming %q", got, tt.want.Field, tt.want.Message)
			}
			if diff := cmp.Diff(QuotaReservationSpec{}, s, cmpopts.IgnoreFields(QuotaReservationSpec{}, "DecodeError")); diff != "" {
				t.Errorf("a spec that did not decode is not empty, so it could be read by mistake (-want +got):\n%s", diff)
			}
		})
	}
}

// Malformed JSON is the decoder's to refuse: the apiserver never stores it.
func TestMalformedSpecIsAnError(t *testing.T) {
	var s QuotaReservationSpec
	if err := s.UnmarshalJSON([]byte(`{"entries":[`)); err == nil {
		t.Fatal("UnmarshalJSON of malformed JSON returned no error")
	}
}

// A list holding one object edited by hand decodes, as an informer's list
// does through the clients' codec: the other objects intact, the broken one
// carrying its error. Before, the whole list failed, and with it the
// informer of every namespace's QuotaReservation.
func TestOneBrokenObjectDoesNotFailTheList(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	list := `{"apiVersion":"mpiguard.io/v1alpha1","kind":"QuotaReservationList","items":[
		{"metadata":{"name":"team-a"},"spec":{"namespace":"team-a","entries":[` + strings.Replace(good, `"pods":2`, `"pods":"two"`, 1) + `]}},
		{"metadata":{"name":"team-b"},"spec":{"namespace":"team-b","entries":[` + good + `]}}]}`
	got := &QuotaReservationList{}
	if _, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(list), nil, got); err != nil {
		t.Fatalf("decoding the list: %v", err)
	}
	if len(got.Items) != 2 {
		t.Fatalf("%d items, want 2", len(got.Items))
	}
	if got.Items[0].Spec.DecodeError == nil {
		t.Error("team-a's wrong-type entry decoded without an error")
	}
	if b := got.Items[1].Spec; b.DecodeError != nil || len(b.Entries) != 1 || b.Entries[0].Parts[0].Pods != 2 {
		t.Errorf("team-b, as mpiguard writes it, decoded as %+v (error %v)", b, b.DecodeError)
	}
}
