// Package load is mpiguard's load tests and benchmarks (its test files,
// see webhook_load_test.go) and the generator of the corpus the offline
// check is compared with gator on (test/load/peers).
package load

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// The check corpus: what `mpiguard check` and `gator test` judge in the
// comparison of test/load/peers. It is generated, never committed, and the
// same on every run (a fixed seed): CheckCorpusJobs MPI TrainJobs spread over
// corpusNamespaces namespaces, three ResourceQuotas per namespace (GPUs,
// CPU and memory, pods; status.used filled as the quota controller would),
// and the benchmark's own ClusterTrainingRuntimes (not mpiguard's curated
// ones: held out from the policies' samples and tests).
const (
	CheckCorpusJobs  = 1000
	corpusNamespaces = 10
	corpusSeed       = 26
)

// corpusRuntimes are the ClusterTrainingRuntimes the corpus defines, each
// with its Workers' GPUs per node (0: CPU only).
var corpusRuntimes = []struct {
	name, image string
	gpus        int
}{
	{"bench-openmpi-a100", "registry.example.com/mpi/openmpi-cuda:5.0", 4},
	{"bench-openmpi-h100", "registry.example.com/mpi/openmpi-cuda:5.0-h100", 8},
	{"bench-openmpi-cpu", "registry.example.com/mpi/openmpi:5.0", 0},
}

// WriteCheckCorpus writes the corpus into dir: cluster.yaml (namespaces,
// quotas, runtimes) and one file of TrainJobs per namespace.
func WriteCheckCorpus(dir string) error {
	var cluster bytes.Buffer
	for _, rt := range corpusRuntimes {
		fmt.Fprintf(&cluster, corpusRuntime, rt.name, rt.image, rt.image)
	}
	rng := rand.New(rand.NewPCG(corpusSeed, corpusSeed))
	for n := range corpusNamespaces {
		ns := fmt.Sprintf("team-%02d", n)
		annotations := "{}"
		if n%3 == 0 { // a namespace's own ceiling, lower than the cluster's
			annotations = `{mpiguard.io/max-duration-hours: "48"}`
		}
		fmt.Fprintf(&cluster, corpusNamespace, ns, annotations)
		gpus, usedGPUs := 160+32*n, 8*(n%4)
		fmt.Fprintf(&cluster, corpusQuotas, ns, gpus, gpus, usedGPUs, 2000, 8000, 2000, 8000, 40, 160, 1000, 1000, 20)
		var jobs bytes.Buffer
		for j := range CheckCorpusJobs / corpusNamespaces {
			writeCorpusJob(&jobs, rng, ns, j)
		}
		if err := os.WriteFile(filepath.Join(dir, ns+"-trainjobs.yaml"), jobs.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "cluster.yaml"), cluster.Bytes(), 0o644)
}

// writeCorpusJob writes one TrainJob: most are allowed; some are denied by
// one policy each (slots not GPUs, a deadline over the ceiling, a reserved
// OpenMPI variable), and the quotas fill up in the later namespaces' tails.
func writeCorpusJob(w *bytes.Buffer, rng *rand.Rand, ns string, j int) {
	rt := corpusRuntimes[rng.IntN(len(corpusRuntimes))]
	nodes := 1 + rng.IntN(4)
	gpus := rt.gpus
	if gpus > 0 && rng.IntN(2) == 0 {
		gpus /= 2
	}
	slots := 1 + rng.IntN(4) // CPU only: warned when over the CPUs
	if gpus > 0 {
		slots = gpus
	}
	if gpus > 0 && rng.IntN(20) == 0 {
		slots = gpus + 1 // denied: slots per worker must equal GPUs per worker
	}
	deadline := ""
	switch r := rng.IntN(20); {
	case r < 8: // none: the mutating pass sets the default, the gator pack denies it
	case r < 19:
		deadline = fmt.Sprintf("\n  activeDeadlineSeconds: %d", 3600*(1+rng.IntN(24)))
	default: // denied: above the cluster's ceiling (168 hours)
		deadline = fmt.Sprintf("\n  activeDeadlineSeconds: %d", 3600*200)
	}
	env := ""
	if rng.IntN(30) == 0 { // denied: an OpenMPI variable the Trainer sets
		env = "\n    env:\n      - {name: OMPI_MCA_orte_keep_fqdn_hostnames, value: \"false\"}"
	}
	suspend := rng.IntN(3) != 0
	resources := fmt.Sprintf("requests: {cpu: \"%d\", memory: %dGi}", 2*slots, 8*slots)
	if gpus > 0 {
		resources = fmt.Sprintf("requests: {cpu: \"%d\", memory: %dGi, nvidia.com/gpu: \"%d\"}\n      limits: {nvidia.com/gpu: \"%d\"}", 2*slots, 8*slots, gpus, gpus)
	}
	fmt.Fprintf(w, corpusJob, fmt.Sprintf("job-%03d", j), ns, suspend, deadline, rt.name, nodes, slots, resources, env)
}

const corpusRuntime = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata:
  name: %s
spec:
  mlPolicy:
    numNodes: 1
    mpi:
      numProcPerNode: 1
      mpiImplementation: OpenMPI
      sshAuthMountPath: /home/mpiuser/.ssh
      runLauncherAsNode: false
  template:
    spec:
      replicatedJobs:
        - name: launcher
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: launcher
                      image: %s
                      resources:
                        requests: {cpu: "1", memory: 1Gi}
        - name: node
          template:
            metadata:
              labels:
                trainer.kubeflow.org/trainjob-ancestor-step: trainer
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: %s
---
`

const corpusNamespace = `apiVersion: v1
kind: Namespace
metadata:
  name: %s
  annotations: %s
---
`

const corpusQuotas = `apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpus
  namespace: %[1]s
spec:
  hard: {requests.nvidia.com/gpu: "%[2]d"}
status:
  hard: {requests.nvidia.com/gpu: "%[3]d"}
  used: {requests.nvidia.com/gpu: "%[4]d"}
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: %[1]s
spec:
  hard: {requests.cpu: "%[5]d", requests.memory: %[6]dGi}
status:
  hard: {requests.cpu: "%[7]d", requests.memory: %[8]dGi}
  used: {requests.cpu: "%[9]d", requests.memory: %[10]dGi}
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: pods
  namespace: %[1]s
spec:
  hard: {pods: "%[11]d"}
status:
  hard: {pods: "%[12]d"}
  used: {pods: "%[13]d"}
---
`

const corpusJob = `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: %s
  namespace: %s
spec:
  suspend: %t%s
  runtimeRef:
    name: %s
  trainer:
    numNodes: %d
    numProcPerNode: %d
    resourcesPerNode:
      %s%s
---
`
