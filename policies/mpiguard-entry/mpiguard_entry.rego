# mpiguard-entry: the spec.runtimePatches entry with manager
# mpiguard.io/admission is mpiguard's own. The mutating webhook writes it (the
# pod template changes other policies ask for: labels, annotations, node
# selector, required node affinity), and the Trainer applies it like any other
# entry, after the others. Nobody else may write under that name: an entry
# posing as mpiguard's could set what the policies then take for mpiguard's
# work. Validate: deny an entry under that manager that sets anything mpiguard
# never writes, or that is not the entry mpiguard writes for this TrainJob (on
# UPDATE: the one stored with it). The engine compares the entry with the
# mutation in Go and reports the differences in input.trainJob.mpiguardEntries;
# this policy decides and words the denial. Its env is judged like any other
# entry's by the other policies (slots-gpus' reserved env).
package mpiguard.policies.mpiguard_entry

import data.mpiguard.lib

manager := "mpiguard.io/admission"

deny contains lib.violation(entry.field, lib.msg_entry_foreign(entry.field, manager, entry.foreignFields)) if {
	lib.mpi_job
	some entry in input.trainJob.mpiguardEntries
	count(entry.foreignFields) > 0
}

deny contains lib.violation(entry.field, lib.msg_entry_differs(entry.field, manager, entry.differences)) if {
	lib.mpi_job
	some entry in input.trainJob.mpiguardEntries
	entry.mpiguardWrites
	count(entry.foreignFields) == 0
	count(entry.differences) > 0
}

# mpiguard writes no entry when no policy changes the job's pod templates
# (an exempt namespace), and never two.
deny contains lib.violation(entry.field, lib.msg_entry_unwanted(entry.field, manager)) if {
	lib.mpi_job
	some entry in input.trainJob.mpiguardEntries
	not entry.mpiguardWrites
	count(entry.foreignFields) == 0
}
