package quota

import (
	"encoding/json"
	corev1 "k8s.io/api/core/v1"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestObjectsInput pins input.job.objects as docs/policies.md describes it:
// what the job creates, and per unscoped quota name that counts objects the
// need, hard, used and held amounts; legacy names count what count/ names do,
// a scoped quota and names that count nothing the job creates are left out.
func TestObjectsInput(t *testing.T) {
	view := objectsView(1) // its SSH Secret exists
	q := quotaOf(false, "count/jobs.batch", "configmaps", "count/secrets", "requests.cpu")
	q.Spec.Hard["count/jobs.batch"] = resource.MustParse("3")
	q.Status.Used = corev1.ResourceList{"count/jobs.batch": resource.MustParse("1")}
	other := Reservation{TrainJob: "team-a/other", Parts: PartsOf(objectsView(0))}
	quotas := []corev1.ResourceQuota{*q, *quotaOf(true, "pods")}
	in := ObjectsInputOf(view, quotas, ReservedOfEach(quotas, []Reservation{other}))
	data, err := json.Marshal(in.Quotas)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"quota": "q", "name": "configmaps", "counts": "count/configmaps", "created": []any{0.0, 2.0}, "milli": 2000.0, "display": "2",
			"hard": 100000.0, "hardDisplay": "100", "used": 0.0, "usedDisplay": "0", "held": 2000.0, "heldDisplay": "2",
			"heldBy": []any{map[string]any{"trainJob": "team-a/other", "milli": 2000.0, "display": "2"}}},
		{"quota": "q", "name": "count/jobs.batch", "counts": "count/jobs.batch", "created": []any{5.0, 6.0}, "milli": 2000.0, "display": "2",
			"hard": 3000.0, "hardDisplay": "3", "used": 1000.0, "usedDisplay": "1", "held": 2000.0, "heldDisplay": "2",
			"heldBy": []any{map[string]any{"trainJob": "team-a/other", "milli": 2000.0, "display": "2"}}},
		{"quota": "q", "name": "count/secrets", "counts": "count/secrets", "created": []any{1.0}, "milli": 0.0, "display": "0",
			"hard": 100000.0, "hardDisplay": "100", "used": 0.0, "usedDisplay": "0", "held": 1000.0, "heldDisplay": "1",
			"heldBy": []any{map[string]any{"trainJob": "team-a/other", "milli": 1000.0, "display": "1"}}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("input.job.objects.quotas (-want +got):\n%s", diff)
	}
	if c := in.Created[1]; c.Kind != "Secret" || c.Count != 1 || c.Existing != 1 || c.Charged != 0 || c.QuotaName != "count/secrets" {
		t.Errorf("the existing Secret reads %+v; want count 1, existing 1, charged 0", c)
	}
}
