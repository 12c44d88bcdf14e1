package publisher

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

func TestSelects(t *testing.T) {
	all, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		opts Options
		want []string
	}{
		"only the OpenMPI aliases": {
			opts: Options{Include: []string{"mpiguard-openmpi", "mpiguard-openmpi-[vc]*"}, Exclude: []string{"*-v[0-9]*"}},
			want: []string{"mpiguard-openmpi", "mpiguard-openmpi-coscheduling", "mpiguard-openmpi-volcano"},
		},
		"MPICH without gang variants": {
			opts: Options{Include: []string{"mpiguard-mpich*"}, Exclude: []string{"*-volcano", "*-coscheduling"}},
			want: []string{"mpiguard-mpich", "mpiguard-mpich-v1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, rt := range all {
				if tc.opts.Selects(rt.Name) {
					got = append(got, rt.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRejectsBadGlob(t *testing.T) {
	err := Options{Include: []string{"mpiguard-["}}.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want an error for an unterminated [")
	}
}
