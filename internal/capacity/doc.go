// Package capacity says whether the cluster's nodes can ever hold a job's
// pods, as facts for the policies (input.capacity, docs/policies.md): for
// each replicated job, how many nodes its pods may be placed on (node
// selector, required node affinity, tolerations, unschedulable nodes, its
// RuntimeClass's scheduling) and how many of those can hold one pod's
// requests; for the gang of Launcher and Workers, how many Workers the
// eligible nodes hold beside the Launcher at once. Go computes the exact
// amounts; the node-capacity policy (policies/node-capacity) decides and
// words the denials and warnings.
//
// Nodes are summarized by shape (Summarize, Index): nodes with the same
// allocatable, labels (but their hostname), taints and unschedulable flag
// are one entry, so a cluster of thousands of nodes in a few node groups
// costs a decision a few entries. The amounts are the nodes' allocatable,
// not what is free now: a pod that fits no node's allocatable can never be
// scheduled; one that fits but waits for running pods is not this check's
// concern.
package capacity
