#!/usr/bin/env bash
# Builds gator, Gatekeeper's offline policy tester, from its released module
# (Go module proxy) into a version-keyed cache folder outside the clone, as
# test/kueue/build.sh does for Kueue: make bench-peers compares `mpiguard
# check` with `gator test` (test/load/peers). No Gatekeeper code is part of
# mpiguard: the module is downloaded and built in its own folder with its
# own go.mod and go.sum, exactly the dependency versions Gatekeeper released.
#
# Usage: build.sh            -> prints the path of the gator binary
# Env:   GATOR_VERSION (default v3.23.1), MPIGUARD_CACHE (default ~/.cache/mpiguard)
set -euo pipefail

GATOR_VERSION="${GATOR_VERSION:-v3.23.1}"
CACHE="${MPIGUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiguard}"
OUT="$CACHE/gator-${GATOR_VERSION}"
BIN="$OUT/gator"
MODULE=github.com/open-policy-agent/gatekeeper/v3

log() { echo "[gator] $*" >&2; }

# A build is complete once its stamp, written after the binary is moved into
# place, names the version.
STAMP="$OUT/gator.version"
if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$GATOR_VERSION" ]; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$OUT"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=readonly
log "downloading ${MODULE}@${GATOR_VERSION}"
dir="$(cd "$OUT" && go mod download -json "${MODULE}@${GATOR_VERSION}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
  log "go mod download did not give the module's folder"
  exit 1
fi
log "building gator ${GATOR_VERSION} (cold: a few minutes on 2 cores; warm: instant)"
cd "$dir"
go build -trimpath -ldflags "-s -w -X ${MODULE}/pkg/version.Version=${GATOR_VERSION}" -o "$BIN.tmp" ./cmd/gator
mv "$BIN.tmp" "$BIN"
echo "$GATOR_VERSION" > "$STAMP"
log "gator ready: $BIN"
echo "$BIN"
