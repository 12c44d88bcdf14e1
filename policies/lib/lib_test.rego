package mpiguard.lib_test

import data.mpiguard.lib

test_display_counts_and_cpu if {
	lib.display("nvidia.com/gpu", 4000) == "4"
	lib.display("cpu", 1500) == "1500m"
	lib.display("cpu", 0) == "0"
	lib.display("cpu", -2000) == "0"
}

test_display_memory_binary_suffixes if {
	lib.display("memory", 17179869184000) == "16Gi"
	lib.display("memory", 8321499136000) == "7936Mi"
	lib.display("memory", 1000000000000) == "1000000000"
	lib.display("hugepages-2Mi", 2097152000) == "2Mi"
}

# Amounts past 64 bits display exactly and never make display fail (OPA
# divides big integers in floating point, and % of a float is an error).
test_display_big_amounts if {
	lib.display("memory", 18014398509481984000) == "16Pi" # 2 x 8Pi
	lib.display("memory", 21990232555520000000) == "20000Ti" # 5000 x 4Ti
	lib.display("memory", 21990233629261824000) == "20480001Gi" # 5000 x 4Ti + 1Gi
	lib.display("memory", 18446744073709551616000) == "16Ei" # 2^64 bytes
	lib.display("memory", 1180591620717411303424000) == "1024Ei" # no suffix past Ei
	lib.display("memory", 18446744073709551617000) == "18446744073709551617"
	lib.display("cpu", 123456789012345678901234567890000) == "123456789012345678901234567890"
	lib.display("cpu", 123456789012345678901234567890001) == "123456789012345678901234567890001m"
	lib.display("nvidia.com/gpu", -18446744073709551616000) == "0"
	lib.display("", 10000000000000000000000) == "10000000000000000000"
}

# The cases Go's quota.Display is held to (internal/quota), for every kind of
# resource: what a message shows of an amount Go supplies and of one a policy
# computes (what a quota has free) reads the same.
test_display_as_go_displays if {
	every c in [
		["memory", 0, "0"],
		["memory", -2000, "0"],
		["memory", 1, "1m"],
		["memory", 1500, "1500m"],
		["memory", 1000000, "1000"],
		["memory", 1023000, "1023"],
		["memory", 1024000, "1Ki"],
		["memory", 1000000000000, "1000000000"],
		["memory", 5764607523034234880000000, "5000Ei"],
		["memory", 18446744073709551617000, "18446744073709551617"],
		["memory", 18446744073709551616001, "18446744073709551616001m"],
		["hugepages-2Mi", 1024000, "1Ki"],
		["ephemeral-storage", 8321499136000, "7936Mi"],
		["cpu", 1000000, "1000"],
		["cpu", 1024000, "1024"],
		["cpu", 18014398509481984000, "18014398509481984"],
		["nvidia.com/gpu", 4000, "4"],
		["nvidia.com/gpu", 1, "1m"],
		["", 1024000, "1024"],
		["", 0, "0"],
	] {
		lib.display(c[0], c[1]) == c[2]
	}
}

# What a quota has free (hard - used - held) can be negative when it is
# over-committed: it displays as 0, like Go's displays of the same amounts.
test_display_free_over_committed if {
	lib.display("nvidia.com/gpu", (16000 - 12000) - 8000) == "0"
	lib.display("memory", (1073741824000 - 536870912000) - 0) == "512Mi"
}

test_quotient_exact if {
	lib.quotient(17, 5) == 3
	lib.quotient(0, 5) == 0
	lib.quotient(1125898833100800000, 4398046511104000) == 255 # (1Pi - 1Gi) / 4Ti, milli
	lib.quotient(1125898833100800000, 5000) == 225179766620160
	lib.quotient(1000000000000000000000000000000, 7) == 142857142857142857142857142857
	lib.quotient(18446744073709551615, 1) == 18446744073709551615
	lib.quotient(36893488147419103231, 2) == 18446744073709551615 # just below a power of two
}

test_quotient_undefined_outside_its_domain if {
	not lib.quotient(-1, 5)
	not lib.quotient(5, 0)
	not lib.quotient(5, -1)
}

test_whole_units if {
	lib.whole_units("cpu", 1333) == 1333
	lib.whole_units("nvidia.com/gpu", 1333) == 1000
	lib.whole_units("nvidia.com/gpu", -1333) == -2000
	lib.whole_units("memory", 225179766620160) == 225179766620000
	lib.whole_units("memory", 18446744073709551616999) == 18446744073709551616000
}
