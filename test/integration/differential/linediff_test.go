package differential

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLineDiff: the failure diff shows whole changed lines, the verdict line
// of their TrainJob, and nothing when both sides agree.
func TestLineDiff(t *testing.T) {
	for _, tc := range []struct {
		name, want, got, diff string
	}{
		{name: "equal", want: "a\nb\n", got: "a\nb\n", diff: ""},
		{
			name: "changed line with its TrainJob",
			want: "TrainJob ns/a: DENIED\n  deny  x\n1\n2\n3\n4\n5\n6\n7\nTrainJob ns/b: DENIED\n  deny  old message\n",
			got:  "TrainJob ns/a: DENIED\n  deny  x\n1\n2\n3\n4\n5\n6\n7\nTrainJob ns/b: DENIED\n  deny  new message\n",
			diff: "  TrainJob ns/a: DENIED\n  ...\n  6\n  7\n  TrainJob ns/b: DENIED\n-   deny  old message\n+   deny  new message\n  \n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.diff, lineDiff(tc.want, tc.got)); d != "" {
				t.Errorf("lineDiff (-want +got):\n%s", d)
			}
		})
	}
}
