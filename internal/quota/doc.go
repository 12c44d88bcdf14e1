// Package quota owns mpiguard's ResourceQuota arithmetic, for admission, the
// retiring controller and `mpiguard check` alike, on its own types (Part,
// Reservation, Scope), never on how the ledger stores them
// (internal/reservations/store):
//   - which quota resource names a pod is charged for, and which pods a
//     quota's scopes select (names.go, scopes.go), as the kube-apiserver's pod
//     quota evaluator does;
//   - what a rendered TrainJob charges each quota, per replicated job (charge.go);
//   - what reservations hold of each quota: the quota admitted jobs whose
//     pods do not all exist yet hold (reservation.go);
//   - exact amounts: quantities of any size, never an int64 product (exact.go).
package quota
