package app

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestWebhookTLSOptionsOfferHTTP2OnlyWhenEnabled(t *testing.T) {
	cases := map[string]struct {
		enableHTTP2 bool
		want        []string
	}{
		// controller-runtime's own default, kept when HTTP/2 is enabled.
		"enabled": {enableHTTP2: true, want: []string{"h2"}},
		"default": {enableHTTP2: false, want: []string{"http/1.1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// controller-runtime starts from this config, then applies TLSOpts.
			cfg := &tls.Config{NextProtos: []string{"h2"}}
			for _, opt := range webhookTLSOptions(tc.enableHTTP2) {
				opt(cfg)
			}
			if diff := cmp.Diff(tc.want, cfg.NextProtos); diff != "" {
				t.Errorf("NextProtos (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTP2IsOffByDefault(t *testing.T) {
	if DefaultServeOptions().EnableHTTP2 {
		t.Error("DefaultServeOptions enables HTTP/2; the webhook server must offer HTTP/1.1 only unless --enable-http2 is set")
	}
}

// TestServeDefaultsKeepControllerRuntimeLeaderElection: the options added for
// tests that run several replicas leave `mpiguard serve` as it was.
func TestServeDefaultsKeepControllerRuntimeLeaderElection(t *testing.T) {
	o := DefaultServeOptions()
	if o.RenewDeadline != 0 || o.RetryPeriod != 0 || o.LeaderElectionReleaseOnCancel || o.SkipControllerNameValidation {
		t.Errorf("DefaultServeOptions changes leader election or name validation: %+v", o)
	}
	if optional(time.Duration(0)) != nil || optional(false) != nil {
		t.Error("a zero option must leave controller-runtime's default (nil)")
	}
	if p := optional(3 * time.Second); p == nil || *p != 3*time.Second {
		t.Errorf("optional(3s) = %v", p)
	}
}

// TestConfigMapsAreCachedFromOwnNamespaceOnly: a tenant's labelled ConfigMap
// must not land in mpiguard's memory (test/integration/rbac checks the same
// against the apiserver, under the shipped RBAC).
func TestConfigMapsAreCachedFromOwnNamespaceOnly(t *testing.T) {
	opts := cacheOptions("mpiguard-system")
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*corev1.ConfigMap); !ok {
			continue
		}
		var namespaces []string
		for ns := range by.Namespaces {
			namespaces = append(namespaces, ns)
		}
		if diff := cmp.Diff([]string{"mpiguard-system"}, namespaces); diff != "" {
			t.Errorf("ConfigMap cache namespaces (-want +got):\n%s", diff)
		}
		if by.Label == nil || by.Label.String() != "mpiguard.io/policy" {
			t.Errorf("ConfigMap cache label selector = %v, want mpiguard.io/policy", by.Label)
		}
		return
	}
	t.Fatal("cacheOptions has no ConfigMap entry: every ConfigMap of the cluster would be cached")
}
