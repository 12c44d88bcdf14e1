#!/usr/bin/env bash
# Builds Kueue's manager from its released module (Go module proxy) into a
# version-keyed cache folder outside the clone, as test/controlplane/build.sh
# does for kube-apiserver: the kueue integration suite runs a real Kueue
# against the test apiserver. `go install sigs.k8s.io/kueue/cmd/kueue@VERSION`
# is refused (the proxy's filtered version listing), so the module is
# downloaded and built in its own folder with its own go.mod and go.sum:
# exactly the dependency versions Kueue released with.
#
# Usage: build.sh            -> prints the path of the kueue binary
# Env:   KUEUE_VERSION (default: the version go.mod pins), MPIGUARD_CACHE (default ~/.cache/mpiguard)
set -euo pipefail

KUEUE_VERSION="${KUEUE_VERSION:-$(cd "$(dirname "$0")/../.." && go list -m -f '{{.Version}}' sigs.k8s.io/kueue)}"
CACHE="${MPIGUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiguard}"
OUT="$CACHE/kueue-${KUEUE_VERSION}"
BIN="$OUT/kueue"

log() { echo "[kueue] $*" >&2; }

# The binary has no --version flag (and -trimpath leaves the linker flags out
# of its build information): a build is complete once its stamp, written
# after the binary is moved into place, names the version.
STAMP="$OUT/kueue.version"
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$KUEUE_VERSION" ]; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$OUT"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly
log "downloading sigs.k8s.io/kueue@${KUEUE_VERSION}"
dir="$(cd "$OUT" && go mod download -json "sigs.k8s.io/kueue@${KUEUE_VERSION}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
  log "go mod download did not give the module's folder"
  exit 1
fi
log "building kueue ${KUEUE_VERSION} (cold: a few minutes on 2 cores; warm: instant)"
cd "$dir"
go build -trimpath \
  -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=${KUEUE_VERSION}" \
  -o "$BIN.tmp" ./cmd/kueue
mv "$BIN.tmp" "$BIN"
echo "$KUEUE_VERSION" > "$STAMP"
log "kueue ready: $BIN"
echo "$BIN"
