package devcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// configureAuditLog makes the kube-apiserver write the audit events policy
// (an audit.k8s.io/v1 Policy, YAML) selects to e.AuditLog, a JSON-lines file
// in LogDir, as a cluster's apiserver does with --audit-policy-file and
// --audit-log-path. Its log backend writes each event before the request is
// answered (--audit-log-mode blocking, the default).
func (e *Env) configureAuditLog(policy string) error {
	policyFile := filepath.Join(e.LogDir, "audit-policy.yaml")
	if err := os.WriteFile(policyFile, []byte(policy), 0o600); err != nil {
		return fmt.Errorf("writing the audit policy: %w", err)
	}
	e.AuditLog = filepath.Join(e.LogDir, "audit.log")
	args := e.Testenv.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policyFile)
	args.Set("audit-log-path", e.AuditLog)
	return nil
}
