package app

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientAuthTLSOptionRefusesABadCA(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "missing.crt"): "no such file",
		notPEM:                            "holds no PEM certificate",
	} {
		_, err := clientAuthTLSOption(file, nil)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "--client-ca") {
			t.Errorf("clientAuthTLSOption(%s) = %v, want an error about --client-ca containing %q", file, err, want)
		}
	}
}

func TestCheckClientName(t *testing.T) {
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "apiserver"}, DNSNames: []string{"kube-apiserver.example"}}
	for _, tc := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"apiserver"}, true},
		{[]string{"other", "kube-apiserver.example"}, true},
		{[]string{"tenant"}, false},
	} {
		err := checkClientName(tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}, tc.names)
		if (err == nil) != tc.ok {
			t.Errorf("names %v: err %v, want ok %t", tc.names, err, tc.ok)
		}
	}
	if checkClientName(tls.ConnectionState{}, []string{"apiserver"}) == nil {
		t.Error("no certificate accepted")
	}
}
