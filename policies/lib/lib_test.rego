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

test_quota_keys if {
	lib.quota_key("pods") == {"kind": "pods"}
	lib.quota_key("cpu") == {"kind": "requests", "resource": "cpu"}
	lib.quota_key("requests.nvidia.com/gpu") == {"kind": "requests", "resource": "nvidia.com/gpu"}
	lib.quota_key("limits.memory") == {"kind": "limits", "resource": "memory"}
	not lib.quota_key("count/jobs.batch")
	not lib.quota_key("services")
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
	lib.hours(86400) == "24"
	lib.hours(5400) == "1.5"
}
