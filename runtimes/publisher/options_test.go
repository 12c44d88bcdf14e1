package publisher

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

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
	err := Options{Include: []string{"mpiguard-["}, Platform: catalog.PlatformKubernetes}.Validate()
	if err == nil {
		t.Fatal("Validate() = nil, want an error for an unterminated [")
	}
}

func TestPlatformFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    catalog.Platform
		wantErr bool
	}{
		{args: nil, want: catalog.PlatformKubernetes},
		{args: []string{"--runtime-platform=openshift"}, want: catalog.PlatformOpenShift},
		{args: []string{"--runtime-platform=OpenShift"}, want: "OpenShift", wantErr: true},
	} {
		o := DefaultOptions()
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if o.Platform != tc.want {
			t.Errorf("%v: platform %q, want %q", tc.args, o.Platform, tc.want)
		}
		if err := o.Validate(); (err != nil) != tc.wantErr {
			t.Errorf("%v: Validate() = %v, want error %v", tc.args, err, tc.wantErr)
		}
	}
}
