package app

import (
	"crypto/tls"
	"testing"

	"github.com/google/go-cmp/cmp"
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
