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
	lib.demand_display({"kind": "pods"}, 10000000000000000000000) == "10000000000000000000"
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

test_demand_labels if {
	lib.demand_label({"kind": "pods"}) == "pods"
	lib.demand_label({"kind": "requests", "resource": "nvidia.com/gpu"}) == "nvidia.com/gpu"
	lib.demand_label({"kind": "limits", "resource": "memory"}) == "memory limits"
	lib.demand_display({"kind": "pods"}, 5000) == "5"
	lib.demand_display({"kind": "limits", "resource": "memory"}, 1073741824000) == "1Gi"
}

test_whole_units if {
	lib.whole_units("cpu", 1333) == 1333
	lib.whole_units("nvidia.com/gpu", 1333) == 1000
	lib.whole_units("nvidia.com/gpu", -1333) == -2000
	lib.whole_units("memory", 225179766620160) == 225179766620000
	lib.whole_units("memory", 18446744073709551616999) == 18446744073709551616000
}

test_fix_text if {
	lib.fix_text(["workers to 1", "GPUs per worker to 1"], "ask an admin") == "reduce workers to 1 or GPUs per worker to 1, or ask an admin"
	lib.fix_text([], "ask an admin") == "ask an admin"
}

test_hours if {
	lib.hours(86400) == "24 hours"
	lib.hours(3600) == "1 hour"
	lib.hours(5400) == "1.5 hours"
}
