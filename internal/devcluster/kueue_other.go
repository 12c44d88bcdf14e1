//go:build !linux

package devcluster

import "os/exec"

// kueueCommand runs Kueue's binary bin with args. Off Linux there is no
// private mount namespace: Kueue reads its metrics certificate from
// /etc/kueue/metrics/certs, which must exist (kueue_linux.go).
func kueueCommand(bin, _ string, args ...string) *exec.Cmd {
	return exec.Command(bin, args...)
}
