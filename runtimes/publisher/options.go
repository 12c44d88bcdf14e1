package publisher

import (
	"fmt"
	"path"

	"github.com/spf13/pflag"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// Options switches the publisher on or off and chooses which curated runtimes it
// publishes.
type Options struct {
	// Enabled runs the publisher. When false, curated runtimes already in the
	// cluster are left as they are (neither repaired nor removed).
	Enabled bool
	// Include lists name globs (path.Match syntax, e.g. "mpiguard-openmpi*"); a
	// curated runtime is published when it matches one. Empty means all.
	Include []string
	// Exclude lists name globs that are never published, even when included.
	Exclude []string
	// Platform is the flavour published: kubernetes pins the pods' UID and
	// fsGroup to 1000, openshift leaves them to the SCC (catalog.Platform).
	Platform catalog.Platform
}

// DefaultOptions publishes every curated runtime, for Kubernetes.
func DefaultOptions() Options { return Options{Enabled: true, Platform: catalog.PlatformKubernetes} }

// AddFlags binds the publisher's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "runtime-publisher", o.Enabled,
		"Publish mpiguard's curated MPI ClusterTrainingRuntimes and repair edits to them.")
	fs.StringSliceVar(&o.Include, "runtime-publisher-include", o.Include,
		"Publish only curated runtimes whose name matches one of these globs (default: all), e.g. 'mpiguard-openmpi*'.")
	fs.StringSliceVar(&o.Exclude, "runtime-publisher-exclude", o.Exclude,
		"Never publish curated runtimes whose name matches one of these globs, e.g. '*-volcano'.")
	fs.StringVar((*string)(&o.Platform), "runtime-platform", string(o.Platform),
		"Flavour of the curated runtimes: 'kubernetes' runs their pods as UID and fsGroup 1000; 'openshift' leaves both to the SCC (restricted-v2), "+
			"which needs images that run under an arbitrary UID (docs/runtimes.md).")
}

// Validate rejects malformed globs up front rather than silently matching nothing.
func (o Options) Validate() error {
	if err := o.platform().Validate(); err != nil {
		return fmt.Errorf("runtime publisher: --runtime-platform: %w", err)
	}
	for _, p := range append(append([]string{}, o.Include...), o.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("runtime publisher: bad name glob %q: %w", p, err)
		}
	}
	return nil
}

// platform is Platform, Kubernetes when unset.
func (o Options) platform() catalog.Platform {
	if o.Platform == "" {
		return catalog.PlatformKubernetes
	}
	return o.Platform
}

// Selects reports whether the runtime named name is published under o.
func (o Options) Selects(name string) bool {
	for _, p := range o.Exclude {
		if ok, _ := path.Match(p, name); ok {
			return false
		}
	}
	if len(o.Include) == 0 {
		return true
	}
	for _, p := range o.Include {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}
