package app

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mpiguard/mpiguard/cmd/mpiguard/app/scheme"
)

// Scheme returns a new scheme with every API group mpiguard uses
// (cmd/mpiguard/app/scheme).
func Scheme() *runtime.Scheme { return scheme.New() }
