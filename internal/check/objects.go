package check

import (
	"context"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createdKinds are the kinds of objects the Trainer and the JobSet
// controller create for a job (render.Objects): a document of one says the
// object exists, so a job that would create it does not (the quota's
// status.used counts it). Other kinds no decision depends on stay ignored.
var createdKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Kind: "Service"}: true, {Kind: "PersistentVolumeClaim"}: true,
	{Group: "batch", Kind: "Job"}: true, {Group: "jobset.x-k8s.io", Kind: "JobSet"}: true,
	{Group: "scheduling.x-k8s.io", Kind: "PodGroup"}: true, {Group: "scheduling.volcano.sh", Kind: "PodGroup"}: true,
}

// addCreated records a document of a kind jobs create; false when it is of
// another kind.
func (c *Cluster) addCreated(apiVersion, kind string, js []byte) (bool, error) {
	gk := schema.FromAPIVersionAndKind(apiVersion, kind).GroupKind()
	if !createdKinds[gk] {
		return false, nil
	}
	var head struct {
		Metadata struct{ Name, Namespace string } `json:"metadata"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return true, err
	}
	defaultNamespace(&head.Metadata.Namespace)
	key := createdKey(gk, client.ObjectKey{Namespace: head.Metadata.Namespace, Name: head.Metadata.Name})
	if c.created == nil {
		c.created = map[string]bool{}
	}
	c.created[key] = true
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		return true, err
	}
	obj.SetNamespace(head.Metadata.Namespace)
	c.Existing = append(c.Existing, obj)
	return true, nil
}

func createdKey(gk schema.GroupKind, key client.ObjectKey) string {
	return gk.String() + " " + key.String()
}

// ObjectExists: the objects of the documents exist.
func (r *clusterReader) ObjectExists(_ context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (bool, error) {
	return r.created[createdKey(gvk.GroupKind(), key)], nil
}
