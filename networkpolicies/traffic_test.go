package networkpolicies

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/mpiguard/mpiguard/networkpolicies/verdict"
)

// The pods and addresses of the traffic matrix: TrainJob team-a/pi with one
// Launcher and two Workers, the cluster DNS, a pod of another namespace and
// one of the same namespace outside the job, Prometheus in monitoring, and
// an S3 endpoint outside the cluster. Labels are spelled out, not taken from
// the package's constants.
var (
	launcher = verdict.Pod("team-a", labels(jobLabel, "pi", roleLabel, "launcher"), "10.1.0.10")
	worker1  = verdict.Pod("team-a", labels(jobLabel, "pi", roleLabel, "node"), "10.1.0.11")
	worker2  = verdict.Pod("team-a", labels(jobLabel, "pi", roleLabel, "node"), "10.1.0.12")
	dnsPod   = verdict.Pod("kube-system", labels("k8s-app", "kube-dns"), "10.1.9.53")
	teamB    = verdict.Pod("team-b", labels("app", "notebook"), "10.2.0.7")
	neighbor = verdict.Pod("team-a", labels("app", "notebook"), "10.1.0.99")
	scraper  = verdict.Pod("monitoring", labels("app.kubernetes.io/name", "prometheus"), "10.3.0.5")
	s3       = verdict.External("52.216.8.10")
)

func tcp(from, to verdict.Endpoint, port int) verdict.Connection {
	return verdict.Connection{From: from, To: to, Port: port, Protocol: corev1.ProtocolTCP}
}

// TestTrafficMatrix evaluates the policies the controller generates, for
// each template as an admin chooses it (annotations on the Namespace), with
// cyclonus's NetworkPolicy matcher: which connections a CNI that enforces
// NetworkPolicy lets through. docs/networkpolicies.md shows this matrix.
func TestTrafficMatrix(t *testing.T) {
	const (
		allow = true
		deny  = false
	)
	// Columns: the template each namespace's annotations choose.
	columns := []struct {
		name        string
		annotations map[string]string
	}{
		{"default (ingress-isolated)", nil},
		{"job-isolated (strict)", labels(AnnotationTemplate, "job-isolated")},
		{"job-isolated + extra egress to S3", labels(AnnotationTemplate, "job-isolated", AnnotationExtraEgress, "52.216.0.0/15:443")},
		{"restricted", labels(AnnotationTemplate, "restricted")},
		{"default + extra ingress for Prometheus", labels(AnnotationExtraIngress, "monitoring/app.kubernetes.io/name=prometheus:9090")},
	}
	rows := []struct {
		what string
		conn verdict.Connection
		want []bool // one per column
	}{
		{"Launcher → Worker sshd", tcp(launcher, worker1, 2222), []bool{allow, allow, allow, allow, allow}},
		{"Worker → Worker, MPI port in the pinned range", tcp(worker1, worker2, 50100), []bool{allow, allow, allow, allow, allow}},
		{"Worker → Worker, MPI port chosen at run time", tcp(worker2, worker1, 37411), []bool{allow, allow, allow, deny, allow}},
		{"Worker → Launcher, mpirun's listener", tcp(worker1, launcher, 50001), []bool{allow, allow, allow, allow, allow}},
		{"Worker → S3 outside the cluster", tcp(worker1, s3, 443), []bool{allow, deny, allow, deny, allow}},
		{"Launcher → S3 on another port", tcp(launcher, s3, 9000), []bool{allow, deny, deny, deny, allow}},
		{"Worker → cluster DNS over UDP", verdict.Connection{From: worker1, To: dnsPod, Port: 53, Protocol: corev1.ProtocolUDP}, []bool{allow, allow, allow, allow, allow}},
		{"Launcher → cluster DNS over TCP", tcp(launcher, dnsPod, 53), []bool{allow, allow, allow, allow, allow}},
		{"another namespace's pod → Worker", tcp(teamB, worker1, 2222), []bool{deny, deny, deny, deny, deny}},
		{"another namespace's pod → Launcher", tcp(teamB, launcher, 50001), []bool{deny, deny, deny, deny, deny}},
		{"same namespace, not the job → Worker", tcp(neighbor, worker1, 2222), []bool{deny, deny, deny, deny, deny}},
		{"Prometheus → Worker metrics", tcp(scraper, worker1, 9090), []bool{deny, deny, deny, deny, allow}},
		{"Prometheus → Worker sshd", tcp(scraper, worker1, 2222), []bool{deny, deny, deny, deny, deny}},
		{"another namespace's pods among themselves", tcp(teamB, scraper, 8080), []bool{allow, allow, allow, allow, allow}},
	}
	opts := Options{}.withDefaults()
	for c, col := range columns {
		s, problems := resolveSettings(opts,
			annotated{what: `Namespace "team-a"`, annotations: col.annotations},
			annotated{what: `ClusterTrainingRuntime "mpi"`})
		if len(problems) > 0 {
			t.Fatalf("%s: %v", col.name, problems)
		}
		policy := desiredPolicy(testJob(), s, opts)
		for _, row := range rows {
			t.Run(fmt.Sprintf("%s/%s", col.name, row.what), func(t *testing.T) {
				got := verdict.Judge([]*networkingv1.NetworkPolicy{policy}, row.conn)
				if got.Allowed != row.want[c] {
					t.Errorf("%s: %s under template %s, want allowed=%t\npolicy spec: %+v",
						row.conn, got, s.Template, row.want[c], policy.Spec)
				}
			})
		}
	}
}
