package diagnosis

import (
	"regexp"
	"strconv"
	"strings"
)

// SSHFailure is a line of the Launcher's termination message that says it
// could not reach a host over SSH.
type SSHFailure struct {
	// Line is the line, as written.
	Line string
	// Host is the host it could not reach, "" when the line names none.
	Host string
	// Worker is the Worker the host is (from its hostname
	// <job>-node-0-N), -1 when it is not a Worker's.
	Worker int
}

// sshLine matches what ssh and OpenMPI's or Hydra's launchers write when a
// Worker's sshd cannot be reached.
var sshLine = regexp.MustCompile(`(?i)ssh: connect to host (\S+) port \d+:|ssh: Could not resolve hostname (\S+?):|ssh_exchange_identification|kex_exchange_identification|Host key verification failed|Permission denied \(publickey|ORTE was unable to reliably start one or more daemons|bash: orted: command not found|HYDU_sock_connect`)

// workerHost is the Trainer's Worker hostname <job>-node-0-N (then the
// JobSet's subdomain).
var workerHost = regexp.MustCompile(`-` + "node" + `-\d+-(\d+)(?:\.|$)`)

// SSHFailed is the first line of message that says the Launcher could not
// reach a host over SSH, nil when none does.
func SSHFailed(message string) *SSHFailure {
	for _, l := range strings.Split(message, "\n") {
		l = strings.TrimSpace(l)
		m := sshLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		f := &SSHFailure{Line: l, Host: strings.TrimSuffix(m[1]+m[2], ":"), Worker: -1}
		if w := workerHost.FindStringSubmatch(f.Host); w != nil {
			f.Worker, _ = strconv.Atoi(w[1])
		}
		return f
	}
	return nil
}

// FirstLine is the first non-blank line of message, trimmed.
func FirstLine(message string) string {
	for _, l := range strings.Split(message, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
