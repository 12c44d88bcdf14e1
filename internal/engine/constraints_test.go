package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mpiguard/mpiguard/internal/input"
	"github.com/mpiguard/mpiguard/runtimes/constraints"
)

// TestRuntimeConstraintsPolicyAgreesWithCheck evaluates the embedded
// runtime-constraints policy and constraints.Check (the Go reference) on the
// same jobs: they must deny the same fields, as often. Namespace globs are
// the delicate part (path.Match in Go, glob.match in Rego).
func TestRuntimeConstraintsPolicyAgreesWithCheck(t *testing.T) {
	eng, err := NewDefault(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	pool := map[string]string{"pool": "gpu", "fast-net": "yes"}
	cases := map[string]struct {
		annotations map[string]string
		ns          string
		workers     int32
		gpus        int64
		launcher    map[string]string // nodeSelector
		worker      map[string]string
	}{
		"unconstrained":              {ns: "web", workers: 64, gpus: 8},
		"at every limit":             {annotations: all("4", "2", "pool=gpu,fast-net", "ml-*"), ns: "ml-a", workers: 4, gpus: 2, launcher: pool, worker: pool},
		"everything violated":        {annotations: all("4", "2", "pool=gpu,fast-net", "ml-*"), ns: "web", workers: 5, gpus: 3, launcher: map[string]string{"pool": "cpu"}},
		"zero GPUs allowed":          {annotations: map[string]string{constraints.AnnotationMaxGPUsPerWorker: "0"}, ns: "a", workers: 1, gpus: 1},
		"bare key any value":         {annotations: map[string]string{constraints.AnnotationRequiredNodeLabels: "fast-net"}, ns: "a", workers: 1, launcher: pool, worker: map[string]string{"fast-net": ""}},
		"exact name":                 {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "team-a"}, ns: "team-a", workers: 1},
		"question mark, one char":    {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "team-?"}, ns: "team-ab", workers: 1},
		"class":                      {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "team-[a-c]"}, ns: "team-b", workers: 1},
		"negated class":              {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "team-[^a-c]"}, ns: "team-b", workers: 1},
		"negated class, other":       {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "team-[^a-c]"}, ns: "team-d", workers: 1},
		"escaped dash":               {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: `team\-a`}, ns: "team-a", workers: 1},
		"braces are literal":         {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "{team-a,team-b}"}, ns: "team-a", workers: 1},
		"star matches all":           {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "*"}, ns: "anything", workers: 1},
		"second pattern matches":     {annotations: map[string]string{constraints.AnnotationAllowedNamespaces: "ml-*, research"}, ns: "research", workers: 1},
		"malformed keeps the others": {annotations: map[string]string{constraints.AnnotationMaxWorkers: "two", constraints.AnnotationMaxGPUsPerWorker: "1"}, ns: "a", workers: 3, gpus: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := mpiRequest(tc.ns, tc.workers)
			req.View.GPUsPerWorker = tc.gpus
			req.View.ReplicatedJobs[0].PodTemplate.Spec.NodeSelector = tc.launcher
			req.View.ReplicatedJobs[1].PodTemplate.Spec.NodeSelector = tc.worker
			req.Runtime = input.RuntimeMeta{Kind: "ClusterTrainingRuntime", Name: "rt", Annotations: tc.annotations}
			d, err := eng.Decide(t.Context(), request(req))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, v := range d.Denials() {
				if v.Policy == "runtime-constraints" {
					got[v.Field]++
				}
			}

			c, parseErrs := constraints.Parse(tc.annotations)
			want := map[string]int{}
			if len(parseErrs) > 0 {
				want["spec.runtimeRef.name"] += len(parseErrs)
			}
			for _, e := range c.Check(constraints.Job{
				Namespace: tc.ns, RuntimeName: "rt", NumNodes: tc.workers, GPUsPerWorker: tc.gpus,
				PodNodeLabels: map[string]map[string]string{"launcher": tc.launcher, "worker": tc.worker},
			}) {
				want[e.Field]++
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("denied fields, Check (-) vs policy (+):\n%s", diff)
			}
		})
	}
}

func all(maxWorkers, maxGPUs, labels, namespaces string) map[string]string {
	return map[string]string{
		constraints.AnnotationMaxWorkers:         maxWorkers,
		constraints.AnnotationMaxGPUsPerWorker:   maxGPUs,
		constraints.AnnotationRequiredNodeLabels: labels,
		constraints.AnnotationAllowedNamespaces:  namespaces,
	}
}
