package smoketest

import (
	"fmt"

	"github.com/mpiguard/mpiguard/runtimes/catalog"
)

// HostfilePath is where the Trainer mounts the hostfile in the launcher.
const HostfilePath = "/etc/mpi/hostfile"

// launcherCommand is the smoke test's launcher: wait for every host of the
// hostfile to resolve, run `hostname` on every slot with mpirun, and write the
// distinct hostnames (one per line) to the termination message, which the
// controller compares with the hostfile. It replaces the runtime's launcher
// command so that the test does not depend on how the runtime wraps mpirun, and
// it passes the hostfile explicitly (OpenMPI 5 ignores the Trainer's ORTE
// environment and would otherwise run every rank on the launcher).
func launcherCommand(implementation string) []string {
	var mpirun string
	switch implementation {
	case catalog.ImplementationIntel, catalog.ImplementationMPICH:
		// Hydra wants "host:N" where the Trainer writes OpenMPI's "host
		// slots=N". As in the curated Hydra runtimes (and proven over real
		// SSH by test/mpi): Hydra runs a host here rather than over SSH only
		// when it is named exactly as gethostname() says, so the launcher's
		// own line (runLauncherAsNode) gets its bare name; and the Workers'
		// proxies connect back to -localhost, the FQDN cluster DNS resolves
		// from any pod (the bare name needs the JobSet's subdomain in their
		// search path).
		mpirun = `self=$(hostname)
awk -v self="$self" '{split($2, s, "="); h = $1} h == self || index(h, self ".") == 1 {h = self} {print h ":" s[2]}' "$hostfile" > /tmp/mpiguard-hostfile
mpirun -f /tmp/mpiguard-hostfile -localhost "$(hostname -f)" -n "$slots" hostname > /tmp/mpiguard-hosts`
	default:
		mpirun = `mpirun --hostfile "$hostfile" -np "$slots" --map-by slot hostname > /tmp/mpiguard-hosts`
	}
	shell, setup := "/bin/sh", ""
	if implementation == catalog.ImplementationIntel {
		// A pod command replaces the image's entrypoint, which is what normally
		// loads the oneAPI environment (and puts mpirun on PATH).
		shell, setup = "/bin/bash", `if [ -f /opt/intel/oneapi/setvars.sh ]; then set +u; . /opt/intel/oneapi/setvars.sh >/dev/null; set -u; fi
`
	}
	script := fmt.Sprintf(`set -eu
%shostfile=%s
for host in $(awk '{print $1}' "$hostfile"); do
  until getent hosts "$host" >/dev/null; do echo "mpiguard smoke test: waiting for $host"; sleep 2; done
done
slots=$(awk '{split($2, s, "="); n += s[2]} END {print n}' "$hostfile")
%s
sort -u /tmp/mpiguard-hosts > /dev/termination-log
echo "mpiguard smoke test: mpirun reached $(wc -l < /dev/termination-log) distinct hosts"
`, setup, HostfilePath, mpirun)
	return []string{shell, "-c", script}
}
