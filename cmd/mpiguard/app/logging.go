package app

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// SetupLogging installs structured (JSON unless --zap-devel) logging for the
// process, shared by controller-runtime, klog users and mpiguard's own code.
func SetupLogging(o zap.Options) {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o)))
}
