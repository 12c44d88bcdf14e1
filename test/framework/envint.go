package framework

import (
	"fmt"
	"os"
	"strconv"
)

// EnvInt is the integer environment variable name, or def when it is unset
// (a suite's seed or case count). A value that is not an integer panics:
// the run would not be the one asked for.
func EnvInt(name string, def int64) int64 {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("%s=%q is not an integer", name, s))
		}
		return n
	}
	return def
}
