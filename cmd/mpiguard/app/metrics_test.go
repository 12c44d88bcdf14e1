package app

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMetricsOptions(t *testing.T) {
	certs := t.TempDir()
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certs, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	empty := t.TempDir()
	type want struct {
		Secure     bool
		Filtered   bool
		CertDir    string
		NextProtos []string
	}
	cases := map[string]struct {
		mutate  func(*ServeOptions)
		want    want
		wantErr string
	}{
		// As shipped: HTTPS, authenticated and authorized, self-signed,
		// HTTP/1.1 only like the webhook server.
		"default": {mutate: func(*ServeOptions) {}, want: want{Secure: true, Filtered: true, NextProtos: []string{"http/1.1"}}},
		"http2":   {mutate: func(o *ServeOptions) { o.EnableHTTP2 = true }, want: want{Secure: true, Filtered: true, NextProtos: []string{"h2"}}},
		"cert dir": {
			mutate: func(o *ServeOptions) { o.MetricsCertDir = certs },
			want:   want{Secure: true, Filtered: true, CertDir: certs, NextProtos: []string{"http/1.1"}},
		},
		"cert dir without the files": {mutate: func(o *ServeOptions) { o.MetricsCertDir = empty }, wantErr: "--metrics-cert-dir " + empty},
		"insecure":                   {mutate: func(o *ServeOptions) { o.SecureMetrics = false }, want: want{NextProtos: []string{"h2"}}},
		"insecure with a cert dir": {
			mutate:  func(o *ServeOptions) { o.SecureMetrics = false; o.MetricsCertDir = certs },
			wantErr: "--metrics-cert-dir needs --metrics-secure",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := DefaultServeOptions()
			tc.mutate(&o)
			m, err := metricsOptions(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.BindAddress != o.MetricsAddr {
				t.Errorf("BindAddress = %q, want %q", m.BindAddress, o.MetricsAddr)
			}
			// controller-runtime's metrics server starts from h2, then applies TLSOpts.
			cfg := &tls.Config{NextProtos: []string{"h2"}}
			for _, opt := range m.TLSOpts {
				opt(cfg)
			}
			got := want{Secure: m.SecureServing, Filtered: m.FilterProvider != nil, CertDir: m.CertDir, NextProtos: cfg.NextProtos}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metrics options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMetricsAreSecureByDefault(t *testing.T) {
	o := DefaultServeOptions()
	if !o.SecureMetrics || o.MetricsAddr != ":8443" {
		t.Errorf("DefaultServeOptions serves metrics at %q secure=%v; want :8443 over HTTPS with authentication (config/manager relies on it)", o.MetricsAddr, o.SecureMetrics)
	}
}
