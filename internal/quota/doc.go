// Package quota owns mpiguard's ResourceQuota arithmetic, for admission, the
// reservation controller and `mpiguard check` alike:
//   - which quota resource names a pod is charged for, and which pods a
//     quota's scopes select (names.go, scopes.go), as the kube-apiserver's pod
//     quota evaluator does;
//   - what a rendered TrainJob charges each quota, per replicated job (charge.go);
//   - what admitted jobs whose pods do not exist yet still hold (holders.go);
//   - exact amounts: quantities of any size, never an int64 product (exact.go).
package quota
