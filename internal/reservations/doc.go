// Package reservations is the quota ledger: what mpiguard has promised of a
// namespace's ResourceQuotas and the pods there do not use yet. Its words,
// used the same way in every package and in docs/quota.md:
//
//   - reservation: the quota an admitted TrainJob holds while its pods do not
//     all exist yet (quota.Reservation: the job and its parts, what its
//     missing pods and objects charge). Its record in the namespace's
//     QuotaReservation object is an entry (spec.entries[]).
//   - quota state: what a decision is judged against besides the job itself:
//     the namespace's ResourceQuotas (status.used as read, plus what their
//     controller missed), and the reservations on them (input.QuotaState,
//     read by ReadState).
//   - decision: what the policies answer for one request, allowed or denied
//     with its violations (engine.Decision), carried with the job as judged
//     in a pipeline.Evaluation.
//
// The ledger has three parts, each a package:
//
//   - store: the QuotaReservation objects and their encoding (shape tables,
//     the validation that refuses a hand edit it cannot read); nothing else
//     knows it.
//   - admit: the admission transaction, the one place a job that is about to
//     start pods is judged against a quota state and its reservation
//     written.
//   - retire: the retiring controller (elected leader), which releases an
//     entry once the quota counts its pods or it will never be charged.
//
// This package is what they share: reading the quota state (ReadState),
// what the entries still reserve once the pods that exist are counted
// (Outstanding), and which pods exist (ReadExisting).
package reservations
