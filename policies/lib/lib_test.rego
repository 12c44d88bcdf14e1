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
