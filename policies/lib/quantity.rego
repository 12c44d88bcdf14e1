# Exact quantity arithmetic and display, shared by the policies that speak of
# resource amounts (aggregate-quota, slots-gpus).
package mpiguard.lib

# Quantities arrive from Go as {"value": <base units>, "milli": <integer>, "display": "16Gi"}.
# Arithmetic uses milli (an exact integer, so fractional CPUs add up exactly);
# display strings are for messages.
#
# Amounts can be far beyond 64 bits (thousands of pods x petabytes). OPA adds,
# subtracts, multiplies, compares and takes % of integers exactly at any size,
# but divides integers outside the int32 range in floating point, and % of a
# float is an error. So nothing here divides a big integer to get an integer:
# display works on digits and bits, and quotient corrects its estimates exactly.

# milli returns the milli amount of resource res in a resource map, 0 when absent.
milli(resources, res) := object.get(resources, [res, "milli"], 0)

# binary_suffixes lists the suffixes memory-like amounts are displayed in,
# largest first, each with its power of two (the suffix is 2^shift bytes).
binary_suffixes := [["Ei", 60], ["Pi", 50], ["Ti", 40], ["Gi", 30], ["Mi", 20], ["Ki", 10]]

# memory_like says whether a resource is counted in bytes.
memory_like(res) if res in {"memory", "ephemeral-storage", "storage"}

memory_like(res) if startswith(res, "hugepages-")

# display formats a milli amount (an integer) of res the way kubectl would show
# it, exactly at any size: 0 for none or less (an over-committed quota has
# nothing free), 1500m for a fraction, bytes with the largest binary suffix
# that divides them (up to Ei: 16Gi, 7936Mi, 1000000000), other whole amounts
# plainly (4, 1000: counts and cores, never 1k). Go displays the amounts it
# supplies (demand.display, hardDisplay, ...) the same way (quota.Display in
# internal/quota, whose test compares the two).
display(_, m) := "0" if m <= 0

display(_, m) := sprintf("%dm", [m]) if {
	m > 0
	m % 1000 != 0
}

display(res, m) := units_text(m) if {
	m > 0
	m % 1000 == 0
	not memory_like(res)
}

display(res, m) := bytes_display(to_number(units_text(m))) if {
	m > 0
	m % 1000 == 0
	memory_like(res)
}

# units_text is a whole milli amount in units, as digits: the milli amount's
# digits without their last three zeros (exact where m / 1000 would not be).
units_text(m) := trim_suffix(format_int(m, 10), "000")

# bytes_display shows a byte count with the largest binary suffix that divides it.
bytes_display(b) := sprintf("%d%s", [bits.rsh(b, s[1]), s[0]]) if {
	exact := [s | some s in binary_suffixes; b >= bits.lsh(1, s[1]); b % bits.lsh(1, s[1]) == 0]
	count(exact) > 0
	s := exact[0]
}

bytes_display(b) := format_int(b, 10) if {
	count([s | some s in binary_suffixes; b >= bits.lsh(1, s[1]); b % bits.lsh(1, s[1]) == 0]) == 0
}

# quotient is how many whole times d fits in a, for integers a >= 0 and d > 0,
# exactly (undefined otherwise). Beyond the int32 range OPA divides in
# floating point (a 64-bit mantissa), so each estimate is only good to about
# 62 bits: two corrections from the exact remainder, then an exact check of
# the neighbours, make it exact for quotients up to about 2^180; past that it
# is undefined rather than wrong.
quotient(a, d) := q if {
	a >= 0
	d > 0
	q1 := quotient_estimate(a, d)
	q2 := q1 + quotient_estimate(a - (q1 * d), d)
	q3 := q2 + quotient_estimate(a - (q2 * d), d)
	some q in [q3 - 1, q3, q3 + 1]
	q * d <= a
	a < (q + 1) * d
}

# quotient_estimate is about x / d (any integer x, d > 0), as an integer.
quotient_estimate(x, d) := round((x - (x % d)) / d)

# whole_units rounds a milli amount (an integer) down to what a user can ask
# for per pod: millicores for cpu, whole units (bytes, devices) for everything
# else.
whole_units("cpu", m) := m

whole_units(res, m) := m - (m % 1000) if {
	res != "cpu"
	m % 1000 >= 0
}

# % keeps the dividend's sign: a negative amount rounds down past it.
whole_units(res, m) := (m - (m % 1000)) - 1000 if {
	res != "cpu"
	m % 1000 < 0
}
