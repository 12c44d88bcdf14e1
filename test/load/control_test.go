package load

import (
	"crypto/sha256"
	"io"
	"net/http"
	"time"
)

// controlSink keeps the control's garbage from being optimised away.
var controlSink []byte

// controlAnswer is an allowed AdmissionReview for the generator's requests.
var controlAnswer = []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"load","allowed":true}}`)

// cpuControl is the load test's control: a webhook that answers every review
// allowed after burning cpu of CPU and allocating garbage bytes, on the same
// server, TLS and generator as mpiguard's webhooks but with none of its code.
// Tuned to the MPI reviews' maximum rate, it shows how much of their latency
// tail comes from that much work on these cores rather than from mpiguard
// (MPIGUARD_LOAD_CONTROL_US, MPIGUARD_LOAD_CONTROL_BYTES; docs/performance.md).
func cpuControl(cpu time.Duration, garbage int) http.Handler {
	iterations := int(float64(cpu) / float64(sha256Cost()))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		last := hashRounds(iterations)
		for left := garbage; left > 0; left -= 1024 {
			controlSink = make([]byte, 1024)
			controlSink[0] = last
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(controlAnswer)
	})
}

// sha256Cost is the time of one SHA-256 of 64 bytes on this machine.
func sha256Cost() time.Duration {
	const n = 200000
	start := time.Now()
	controlSink = []byte{hashRounds(n)}
	return time.Since(start) / n
}

// hashRounds chains n SHA-256 hashes of 64 bytes (each depends on the last,
// so none can be skipped) and returns a byte of the last.
func hashRounds(n int) byte {
	var b [64]byte
	for range n {
		s := sha256.Sum256(b[:])
		b[0] = s[0]
	}
	return b[0]
}
