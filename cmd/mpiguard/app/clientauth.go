package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// clientAuthTLSOption makes the webhook server accept only callers that
// present a certificate signed by the CA in caFile: the kube-apiserver, given
// a client certificate in its AdmissionConfiguration (docs/operations.md).
// Without it any pod that reaches the webhook port can send a hand-built
// AdmissionReview, and an allowed one reserves quota until its grace ends.
// With names, the certificate's common name or one of its DNS names must also
// be one of them, so a CA that signs other clients too (a cluster CA) can be
// used without letting its other clients in.
//
// The CA is read once, at start: a new CA takes a restart (a rolling one),
// as controller-runtime's own ClientCAName does.
func clientAuthTLSOption(caFile string, names []string) (func(*tls.Config), error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca: %s holds no PEM certificate", caFile)
	}
	return func(c *tls.Config) {
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
		if len(names) > 0 {
			c.VerifyConnection = func(cs tls.ConnectionState) error { return checkClientName(cs, names) }
		}
	}, nil
}

// checkClientName accepts a verified client certificate whose common name or
// a DNS name is one of names.
func checkClientName(cs tls.ConnectionState, names []string) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	leaf := cs.PeerCertificates[0]
	if slices.Contains(names, leaf.Subject.CommonName) {
		return nil
	}
	for _, n := range leaf.DNSNames {
		if slices.Contains(names, n) {
			return nil
		}
	}
	return fmt.Errorf("client certificate %q (DNS names %s) is not one of --client-cert-names %s",
		leaf.Subject.CommonName, strings.Join(leaf.DNSNames, ","), strings.Join(names, ","))
}
