package devcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// WebhookClientName is the common name of the certificate the kube-apiserver
// presents to webhooks when Options.ClientAuth is on; mpiguard runs with
// --client-cert-names set to it.
const WebhookClientName = "kube-apiserver-webhook-client"

// TestCA is a throwaway certificate authority for tests of client
// certificate authentication.
type TestCA struct {
	Cert *x509.Certificate
	key  crypto.Signer
	// PEM is the CA certificate, PEM encoded.
	PEM []byte
}

// NewTestCA makes a CA valid for a day.
func NewTestCA(name string) (*TestCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &TestCA{Cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue signs a client certificate with common name cn; it returns the
// certificate and key as PEM and as a tls.Certificate.
func (ca *TestCA) Issue(cn string) (certPEM, keyPEM []byte, pair tls.Certificate, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, tls.Certificate{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, tls.Certificate{}, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	return certPEM, keyPEM, pair, err
}

// configureWebhookClientCert makes the kube-apiserver present a client
// certificate signed by a new CA to every webhook, the way
// docs/operations.md tells operators to (an AdmissionConfiguration whose
// webhook plugins read a kubeconfig with the certificate), and returns the
// CA's file for mpiguard's --client-ca.
func (e *Env) configureWebhookClientCert(dir string) (caFile string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ca, err := NewTestCA("mpiguard-test-webhook-client-ca")
	if err != nil {
		return "", err
	}
	e.WebhookClientCA = ca
	certPEM, keyPEM, _, err := ca.Issue(WebhookClientName)
	if err != nil {
		return "", err
	}
	caFile = filepath.Join(dir, "client-ca.crt")
	certFile, keyFile := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	kubeconfig, admissionConfig := filepath.Join(dir, "webhook-kubeconfig.yaml"), filepath.Join(dir, "admission-config.yaml")
	files := map[string]string{
		caFile:   string(ca.PEM),
		certFile: string(certPEM),
		keyFile:  string(keyPEM),
		// "*" matches every webhook the apiserver calls.
		kubeconfig: fmt.Sprintf(`apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: %s
    client-key: %s
`, certFile, keyFile),
		admissionConfig: fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: %[1]s
`, kubeconfig),
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return "", err
		}
	}
	e.Testenv.ControlPlane.GetAPIServer().Configure().Set("admission-control-config-file", admissionConfig)
	return caFile, nil
}
