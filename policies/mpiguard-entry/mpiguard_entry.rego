# mpiguard-entry: the spec.runtimePatches entry with manager
# mpiguard.io/admission is mpiguard's own. The mutating webhook writes it (the
# pod template changes other policies ask for: labels, annotations, node
# selector, required node affinity), and the Trainer applies it like any other
# entry, after the others. Nobody else may write under that name: an entry
# posing as mpiguard's could set what the policies then take for mpiguard's
# work. Validate: deny an entry under that manager that sets anything mpiguard
# never writes, or that is not the entry mpiguard writes for this TrainJob (on
# UPDATE: the one stored with it), and an UPDATE that drops the stored one.
# The engine compares the entry with the mutation in Go and reports the
# differences in input.trainJob.mpiguardEntries; this policy decides and words
# the denial. Its env is judged like any other
# entry's by the other policies (slots-gpus' reserved env).
package mpiguard.policies.mpiguard_entry

import data.mpiguard.lib

manager := "mpiguard.io/admission"

deny contains lib.violation(entry.field, msg_entry_foreign(entry.field, entry.foreignFields)) if {
	lib.mpi_job
	some entry in input.trainJob.mpiguardEntries
	count(entry.foreignFields) > 0
}

msg_entry_foreign(field, paths) := sprintf(
	"%s has manager %s, which is reserved for mpiguard's own entry, but sets %s, which mpiguard never writes (it writes only pod template labels, annotations, node selector and required node affinity); an entry under mpiguard's name is trusted as mpiguard's work, so it must not carry anything else; remove the runtimePatches entry with manager %s or give it a manager of your own; mpiguard writes its entry itself",
	[field, manager, some_paths(paths), manager],
)

deny contains lib.violation(entry.field, msg_entry_differs(entry.field, entry.differences)) if {
	lib.mpi_job
	some entry in input.trainJob.mpiguardEntries
	entry.mpiguardWrites
	count(entry.foreignFields) == 0
	count(entry.differences) > 0
}

msg_entry_differs(field, paths) := sprintf(
	"%s has manager %s, which is reserved for mpiguard's own entry, but is not mpiguard's entry for this TrainJob (it differs at %s); an entry under mpiguard's name is trusted as mpiguard's work, so it must be exactly that; remove the runtimePatches entry with manager %s or give it a manager of your own; mpiguard writes its entry itself",
	[field, manager, some_paths(paths), manager],
)

# mpiguard writes no entry when no policy changes the job's pod templates
# (an exempt namespace), and never two.
deny contains lib.violation(entry.field, msg_entry_unwanted(entry.field)) if {
	lib.mpi_job
	some entry in input.trainJob.mpiguardEntries
	not entry.mpiguardWrites
	count(entry.foreignFields) == 0
}

msg_entry_unwanted(field) := sprintf(
	"%s has manager %s, which is reserved for mpiguard's own entry, but mpiguard writes no such entry for this TrainJob (no policy changes its pod templates here, or this is a second entry); an entry under mpiguard's name is trusted as mpiguard's work; remove the runtimePatches entry with manager %s or give it a manager of your own; mpiguard writes its entry itself when it needs one",
	[field, manager, manager],
)

# An UPDATE that drops the entry mpiguard stored with the job. The mutating
# pass puts the stored entry back when an update leaves it out (a client
# compiled against a TrainJob type without spec.runtimePatches, as every
# Kueue release targeting Trainer v2.0/v2.1 is, writes objects without it:
# internal/pipeline, restore.go), so this only catches an update that lost it
# after mpiguard's mutation.
deny contains lib.violation("spec.runtimePatches", msg_entry_removed) if {
	lib.mpi_job
	input.request.operation == "UPDATE"
	manager in input.oldTrainJob.runtimePatchManagers
	not manager in input.trainJob.runtimePatchManagers
}

msg_entry_removed := sprintf(
	"the update removes the runtimePatches entry with manager %s, which mpiguard wrote when the TrainJob was admitted (its pod template changes: Istio opt-out, data residency node affinity); keep that entry as stored in the object you write (a client built against a TrainJob type without spec.runtimePatches drops it: use one that knows it, or patch only the fields you change)",
	[manager],
)

# some_paths names the first field paths of a list and counts the rest.
max_named_paths := 3

some_paths(paths) := concat(", ", paths) if count(paths) <= max_named_paths

some_paths(paths) := sprintf("%s and %d more", [concat(", ", array.slice(paths, 0, max_named_paths)), count(paths) - max_named_paths]) if {
	count(paths) > max_named_paths
}
