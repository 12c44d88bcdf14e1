#!/usr/bin/env bash
# Builds KWOK's controller (sigs.k8s.io/kwok/cmd/kwok) from its released
# module (Go module proxy) into a version-keyed cache folder outside the
# clone, as test/controlplane/build.sh does for kube-apiserver, and copies
# the KWOK stages the local cluster runs from the same module: KWOK plays
# the kubelet of the fake GPU nodes of `make run` and of the integration
# suites that ask for running pods (internal/devcluster/kwok.go).
#
# Stages (stages/): node-initialize (a node becomes Ready) from
# kustomize/stage/node/fast, and kustomize/stage/pod/general (a pod bound to
# a KWOK node gets an IP, becomes Running and Ready, a Job's pod then
# completes, a deleted pod goes; each after a delay its annotations may set).
#
# Usage: build.sh            -> prints the folder that holds kwok and stages/
# Env:   KWOK_VERSION (default v0.8.0; the Makefile pins it), MPIGUARD_CACHE (default ~/.cache/mpiguard)
set -euo pipefail

KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
CACHE="${MPIGUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiguard}"
OUT="$CACHE/kwok-${KWOK_VERSION}"
MODULE=sigs.k8s.io/kwok

log() { echo "[kwok] $*" >&2; }

# The whole output is read before matching (a `| grep -q` under pipefail can
# fail the pipe with SIGPIPE and rebuild a binary that was there).
have_binary() { local out; [ -x "$OUT/kwok" ] && out="$("$OUT/kwok" --version 2>/dev/null)" && [[ "$out" == *"$KWOK_VERSION"* ]]; }
have_stages() { [ -f "$OUT/stages/pod-complete.yaml" ] && [ -f "$OUT/stages/node-initialize.yaml" ]; }

if have_binary && have_stages; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$OUT"
export CGO_ENABLED=0 GOWORK=off GOFLAGS=
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

if ! have_binary; then
  log "building kwok ${KWOK_VERSION} (cold: about 3 CPU-minutes, 9 minutes on 2 busy cores; warm: instant)"
  GOBIN="$work/bin" go install -trimpath -ldflags "-s -w" "$MODULE/cmd/kwok@${KWOK_VERSION}"
  mv "$work/bin/kwok" "$OUT/kwok.tmp" && mv "$OUT/kwok.tmp" "$OUT/kwok"
  log "kwok ready: $("$OUT/kwok" --version)"
fi

if ! have_stages; then
  dir="$(go mod download -json "$MODULE@${KWOK_VERSION}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  if [ -z "$dir" ] || [ ! -d "$dir/kustomize/stage" ]; then
    log "go mod download did not give the module's folder"
    exit 1
  fi
  rm -rf "$OUT/stages.tmp" && mkdir -p "$OUT/stages.tmp"
  install -m 0644 "$dir/kustomize/stage/node/fast/node-initialize.yaml" "$OUT/stages.tmp/"
  for f in "$dir"/kustomize/stage/pod/general/pod-*.yaml; do install -m 0644 "$f" "$OUT/stages.tmp/"; done
  rm -rf "$OUT/stages" && mv "$OUT/stages.tmp" "$OUT/stages"
  log "stages ready: $(cd "$OUT/stages" && echo *.yaml)"
fi

echo "$OUT"
