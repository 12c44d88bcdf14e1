package main

import (
	"context"
	"embed"
	"fmt"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mpiguard/mpiguard/internal/devcluster"
)

// samples are the demo's objects, as a user would write them; the demo
// creates cluster.yaml's and submits jobs.yaml's one by one.
//
//go:embed samples/*.yaml
var samples embed.FS

func readSamples(file string) ([]*unstructured.Unstructured, error) {
	data, err := samples.ReadFile("samples/" + file)
	if err != nil {
		return nil, err
	}
	return devcluster.DecodeObjects(data, "cmd/mpiguard-dev/samples/"+file)
}

// createSampleCluster creates cluster.yaml's namespaces, quota and runtimes.
func createSampleCluster(ctx context.Context, c client.Client) error {
	objs, err := readSamples("cluster.yaml")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// sampleJob is the TrainJob of jobs.yaml named name.
func sampleJob(name string) (*trainer.TrainJob, error) {
	objs, err := readSamples("jobs.yaml")
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetName() != name {
			continue
		}
		job := &trainer.TrainJob{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, job); err != nil {
			return nil, fmt.Errorf("samples/jobs.yaml, TrainJob %s: %w", name, err)
		}
		return job, nil
	}
	return nil, fmt.Errorf("samples/jobs.yaml has no TrainJob %s", name)
}
