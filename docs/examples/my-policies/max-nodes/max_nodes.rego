# max-nodes: the example of docs/policies.md "Writing a policy", a policy of
# its own laid over the embedded ones (mpiguard check --policies).
package mpiguard.policies.max_nodes

import data.mpiguard.lib

# maxNodes: type, meaning and default in parameters.schema.yaml.
max_nodes := input.parameters["max-nodes"].maxNodes

deny contains lib.violation("spec.trainer.numNodes", msg_too_many_nodes) if {
	input.job.numNodes > max_nodes
}

msg_too_many_nodes := sprintf(
	"TrainJob asks for %d hostfile nodes but at most %d are allowed; set spec.trainer.numNodes to %d or less",
	[input.job.numNodes, max_nodes, max_nodes],
)
