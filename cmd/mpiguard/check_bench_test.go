package main

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
)

// BenchmarkCheck runs `mpiguard check -f $MPIGUARD_CHECK_CORPUS -o json` in
// process, start-up included (policy compile, renderer, CRD validators), for
// CPU and memory profiles of the offline check (docs/performance.md,
// "Offline check"). The corpus of make bench-peers:
//
//	go run ./test/load/peers -gator $(bash test/gator/build.sh) -rounds 1 -keep /tmp/corpus
//	MPIGUARD_CHECK_CORPUS=/tmp/corpus/corpus go test ./cmd/mpiguard -run '^$' -bench Check -benchtime 1x -cpuprofile cpu.prof
func BenchmarkCheck(b *testing.B) {
	corpus := os.Getenv("MPIGUARD_CHECK_CORPUS")
	if corpus == "" {
		b.Skip("MPIGUARD_CHECK_CORPUS is not set")
	}
	for b.Loop() {
		err := runCheck(context.Background(), checkOptions{files: []string{corpus}, output: "json"}, nil, io.Discard, io.Discard)
		var exit *exitError
		if err != nil && (!errors.As(err, &exit) || exit.code != 1) { // 1: some denied
			b.Fatal(err)
		}
	}
}
