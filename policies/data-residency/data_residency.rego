# data-residency: a namespace labelled with a residency zone may only run pods
# on nodes of that zone. Mutate (CREATE): restrict every replicated job's pods
# with a node selector (one allowed value) or a required node affinity term
# (several). Validate the effective pod templates, after every runtime patch,
# on CREATE and UPDATE (controllers patch suspended jobs): each pod must be
# restricted to the zone, and no selector or affinity may name another value.
package mpiguard.policies.data_residency

import data.mpiguard.lib

# The parameters (defaults and meaning: parameters.schema.yaml):
# namespaceLabel (the namespace label naming its zone), nodeLabel (the node
# label a zone restricts) and zones (zone name -> allowed values of nodeLabel,
# e.g. {"eu": ["eu-west-1", "eu-central-1"]}).
params := input.parameters["data-residency"]

node_label := params.nodeLabel

zone := input.namespace.labels[params.namespaceLabel]

allowed := sort(params.zones[zone])

terms_field := "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"

deny contains lib.violation("metadata.namespace", msg_unknown_zone) if {
	lib.mpi_job
	zone
	not params.zones[zone]
}

msg_unknown_zone := sprintf(
	"namespace %q is labelled %s=%q but no such data residency zone is configured, so mpiguard cannot tell where its pods may run; ask an admin to add zone %q to the data-residency parameters or fix the label",
	[input.namespace.name, params.namespaceLabel, zone, zone],
)

deny contains lib.violation(lib.pods_field, msg_not_restricted(rj, why)) if {
	lib.mpi_job
	count(allowed) > 0
	some rj in input.job.replicatedJobs
	some why in problems(rj.nodeSelector, rj.requiredNodeSelectorTerms)
}

msg_not_restricted(rj, why) := sprintf(
	"the %s pods may run outside data residency zone %q: %s; %s",
	[lib.role_label(rj), zone, why, lib.pods_fix(sprintf("restrict them to %s in {%s} (remove selectors and required affinity for other values)", [node_label, concat(", ", allowed)]))],
)

# problems lists why pods with this node selector and these required node
# selector terms may leave the zone: a selector or affinity naming another
# value, or (only when there is none) no restriction at all.
problems(selector, terms) := outside if {
	outside := selector_outside(selector) | terms_outside(terms)
	count(outside) > 0
} else := {sprintf("no nodeSelector or required node affinity restricts %s", [node_label])} if {
	not restricted(selector, terms)
} else := set()

selector_outside(selector) := {sprintf("nodeSelector %s=%s is outside the zone", [node_label, v]) |
	v := selector[node_label]
	not v in allowed
}

terms_outside(terms) := {sprintf("required node affinity allows %s=%s", [node_label, v]) |
	some term in terms
	some expr in object.get(term, "matchExpressions", [])
	expr.key == node_label
	expr.operator == "In"
	some v in expr.values
	not v in allowed
}

restricted(selector, _) if selector[node_label] in allowed

# Terms are ORed: every term must restrict the label for the pod to be restricted.
restricted(_, terms) if {
	count(terms) > 0
	every term in terms {
		term_restricted(term)
	}
}

term_restricted(term) if {
	some expr in object.get(term, "matchExpressions", [])
	expr.key == node_label
	expr.operator == "In"
	count(expr.values) > 0
	every v in expr.values {
		v in allowed
	}
}

zone_expr := {"key": node_label, "operator": "In", "values": allowed}

mutate contains {"target": "podTemplate", "replicatedJob": rj.name, "field": "spec.nodeSelector", "key": node_label, "value": allowed[0]} if {
	lib.mpi_job
	count(allowed) == 1
	lib.is_create
	some rj in input.job.replicatedJobs
}

# With several allowed values a node selector cannot express the zone, so the
# zone expression is ANDed into every required term (kept idempotent: a term
# already holding it is left alone).
mutate contains {"target": "podTemplate", "replicatedJob": rj.name, "field": terms_field, "value": with_zone(rj.requiredNodeSelectorTerms)} if {
	lib.mpi_job
	count(allowed) > 1
	lib.is_create
	some rj in input.job.replicatedJobs
}

with_zone(ts) := [{"matchExpressions": [zone_expr]}] if count(ts) == 0

with_zone(ts) := [add_zone(t) | some t in ts] if count(ts) > 0

add_zone(t) := t if zone_expr in object.get(t, "matchExpressions", [])

add_zone(t) := object.union(t, {"matchExpressions": array.concat(object.get(t, "matchExpressions", []), [zone_expr])}) if {
	not zone_expr in object.get(t, "matchExpressions", [])
}
