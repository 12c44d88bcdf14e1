package kube

const (
	DefaultNamespaceLabel = "kubernetes.io/metadata.name"
)
