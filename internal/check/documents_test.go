package check

import (
	"strings"
	"testing"
)

// TestReadRefusesDuplicateObjects: one object per kind, namespace and name,
// whether the namespace is written or left to default.
func TestReadRefusesDuplicateObjects(t *testing.T) {
	lr := func(meta string) string {
		return "apiVersion: v1\nkind: LimitRange\nmetadata: {name: lr" + meta + "}\nspec: {limits: [{type: Container, max: {cpu: \"4\"}}]}\n"
	}
	for _, tc := range []struct {
		name, docs, want string
	}{
		{"LimitRange with and without namespace", lr("") + "---\n" + lr(", namespace: default"), `duplicate LimitRange "default/lr"`},
		{"LimitRange twice", lr("") + "---\n" + lr(""), `duplicate LimitRange "default/lr"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := NewCluster().Read("in.yaml", strings.NewReader(tc.docs))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestReadQuotaErrorsInStableOrder: the field errors of an invalid quota come
// in the same order on every read (map order must not reach the message).
func TestReadQuotaErrorsInStableOrder(t *testing.T) {
	const doc = "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: team-a}\n" +
		"spec: {hard: {pods: \"-1\", services: \"-1\", secrets: \"-1\", configmaps: \"-1\", requests.nvidia.com/gpu: \"-1\"}}\n"
	var first string
	for i := range 50 {
		err := NewCluster().Read("in.yaml", strings.NewReader(doc))
		if err == nil {
			t.Fatal("Read accepted negative quota amounts")
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("read %d words the errors differently:\n%s\nwant\n%s", i, err, first)
		}
	}
}
