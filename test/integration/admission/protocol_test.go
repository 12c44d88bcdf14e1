package admission

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The webhook server's protocol", func() {
	// The kube-apiserver takes HTTP/2 whenever the webhook server offers it;
	// mpiguard offers HTTP/1.1 only unless --enable-http2 is set (CVE-2023-44487,
	// and HTTP/2 costs the webhook more CPU per review: docs/performance.md).
	It("is HTTP/1.1 even for a client that prefers HTTP/2", func() {
		wh := env.Testenv.WebhookInstallOptions
		pool := x509.NewCertPool()
		Expect(pool.AppendCertsFromPEM(wh.LocalServingCAData)).To(BeTrue())
		addr := net.JoinHostPort(wh.LocalServingHost, strconv.Itoa(wh.LocalServingPort))
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = conn.Close() }()
		Expect(conn.ConnectionState().NegotiatedProtocol).To(Equal("http/1.1"))
	})
})
