package mpiguard.policies.max_nodes_test

import data.mpiguard.policies.max_nodes

# The parameters as the engine passes them: complete (the schema's default).
create(nodes) := {
	"request": {"operation": "CREATE"},
	"parameters": {"max-nodes": {"maxNodes": 16}},
	"job": {"mpi": true, "numNodes": nodes},
}

test_at_most_allowed if {
	count(max_nodes.deny) == 0 with input as create(16)
}

test_more_denied if {
	some v in max_nodes.deny with input as create(17)
	v.field == "spec.trainer.numNodes"
}
