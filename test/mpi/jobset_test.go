package mpi

import (
	"context"
	"fmt"
	"strings"
	"time"

	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// run runs the pods as the JobSet does, replicated job by replicated job, each
// once the jobs it dependsOn are Ready, and returns the output of the
// successPolicy's target (the launcher) once it has finished.
func (k *kubelet) run(ctx context.Context) (string, error) {
	js := k.r.jobSet
	for _, rj := range js.Spec.ReplicatedJobs {
		for _, dep := range rj.DependsOn {
			for _, p := range k.podsOf(dep.Name) {
				var err error
				switch dep.Status {
				case jobsetv1alpha2.DependencyReady:
					err = k.waitReady(ctx, p)
				default:
					err = p.wait(ctx)
				}
				if err != nil {
					return "", fmt.Errorf("%s waits for %s %s: %w", rj.Name, dep.Name, dep.Status, err)
				}
			}
		}
		for _, p := range k.podsOf(rj.Name) {
			if err := k.start(p); err != nil {
				return "", err
			}
		}
	}
	if js.Spec.SuccessPolicy == nil || len(js.Spec.SuccessPolicy.TargetReplicatedJobs) != 1 {
		k.t.Fatalf("the JobSet's successPolicy has no single target job: %+v", js.Spec.SuccessPolicy)
	}
	target := k.podsOf(js.Spec.SuccessPolicy.TargetReplicatedJobs[0])
	if len(target) != 1 {
		k.t.Fatalf("the successPolicy's target job has %d pods, want 1", len(target))
	}
	err := target[0].wait(ctx)
	if err != nil {
		var workers []string
		for _, p := range k.pods {
			if p != target[0] {
				workers = append(workers, fmt.Sprintf("--- %s:\n%s", p.hostname, p.out.String()))
			}
		}
		err = fmt.Errorf("%w\nthe other pods' output:\n%s", err, strings.Join(workers, "\n"))
	}
	return target[0].out.String(), err
}

func (k *kubelet) podsOf(replicatedJob string) []*pod {
	var out []*pod
	for _, p := range k.pods {
		if p.replicatedJob == replicatedJob {
			out = append(out, p)
		}
	}
	return out
}

// cancelOnOutput calls cancel once a pod of replicatedJob has printed want, or
// when ctx ends: a run that hangs once it has failed for a known reason need
// not wait for its deadline.
func (k *kubelet) cancelOnOutput(ctx context.Context, cancel context.CancelFunc, replicatedJob, want string) {
	for {
		for _, p := range k.podsOf(replicatedJob) {
			if strings.Contains(p.out.String(), want) {
				cancel()
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}
