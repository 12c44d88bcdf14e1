# Package lib holds the helpers every mpiguard policy shares: quantity arithmetic
# and display, job-shape helpers, and (in messages.rego) every message text, so
# wording stays consistent and is edited in one place.
package mpiguard.lib

# Quantities arrive from Go as {"value": <base units>, "milli": <integer>, "display": "16Gi"}.
# Arithmetic uses milli (an exact integer, so fractional CPUs add up exactly);
# display strings are for messages.

# milli returns the milli amount of resource res in a resource map, 0 when absent.
milli(resources, res) := object.get(resources, [res, "milli"], 0)

# binary_suffixes lists the suffixes memory-like amounts are displayed in, largest first.
binary_suffixes := [["Ti", 1099511627776], ["Gi", 1073741824], ["Mi", 1048576], ["Ki", 1024]]

# memory_like says whether a resource is counted in bytes.
memory_like(res) if res in {"memory", "ephemeral-storage", "storage"}

memory_like(res) if startswith(res, "hugepages-")

# display formats a milli amount of res the way kubectl would show it: 500m,
# 4, 16Gi. Negative amounts (an over-committed quota) display as 0.
display(_, m) := "0" if m <= 0

display(_, m) := sprintf("%dm", [m]) if {
	m > 0
	m % 1000 != 0
}

display(res, m) := format_int(m / 1000, 10) if {
	m > 0
	m % 1000 == 0
	not memory_like(res)
}

display(res, m) := bytes_display(m / 1000) if {
	m > 0
	m % 1000 == 0
	memory_like(res)
}

# bytes_display shows a byte count with the largest binary suffix that divides it.
bytes_display(b) := sprintf("%d%s", [b / s[1], s[0]]) if {
	exact := [s | some s in binary_suffixes; b >= s[1]; b % s[1] == 0]
	count(exact) > 0
	s := exact[0]
}

bytes_display(b) := format_int(b, 10) if {
	count([s | some s in binary_suffixes; b >= s[1]; b % s[1] == 0]) == 0
}

# whole_units rounds a milli amount down to what a user can ask for per pod:
# millicores for cpu, whole units (bytes, devices) for everything else.
whole_units("cpu", m) := m

whole_units(res, m) := floor(m / 1000) * 1000 if res != "cpu"
