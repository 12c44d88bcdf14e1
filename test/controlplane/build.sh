#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and etcd from source through the
# Go module proxy into a version-keyed cache folder outside the clone, so that
# envtest has a real control plane without any prebuilt download (setup-envtest
# cannot reach its bucket here). kube-controller-manager is optional for a test:
# the framework runs it (only the controllers a suite asks for) when a suite
# needs Jobs to really create pods; kube-scheduler binds pods to the KWOK
# nodes of `make run` and of suites where jobs run (Options.Workloads). kubectl is for the install suite, which runs
# the README's `make deploy` commands (they pipe into kubectl) as written.
#
# Usage: build.sh            -> prints the folder that holds the binaries
# Env:   KUBE_VERSION, ETCD_VERSION, MPIGUARD_CACHE (default ~/.cache/mpiguard)
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.36.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE="${MPIGUARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiguard}"
OUT="$CACHE/controlplane/k8s-${KUBE_VERSION}-etcd-${ETCD_VERSION}"
STAGING_VERSION="v0.${KUBE_VERSION#v1.}"

log() { echo "[controlplane] $*" >&2; }

have() { # binary exists and reports the expected version
  local bin="$1" want="$2" flag=--version out
  [ "$bin" = kubectl ] && flag="version --client"
  [ -x "$OUT/$bin" ] || return 1
  # Read the whole output before matching: under pipefail, `| grep -q` can
  # end the pipe while the binary still writes, fail it with SIGPIPE and
  # rebuild a binary that was there.
  # shellcheck disable=SC2086 # flag is two words for kubectl
  out="$("$OUT/$bin" $flag 2>/dev/null)" || return 1
  [[ "$out" == *"$want"* ]]
}

# Built from one k8s.io/kubernetes module graph, in one go build: they share
# most packages, so kube-controller-manager adds little to a cold build, and
# kube-scheduler less: all but 6 of its packages are the others' (go list
# -deps), so it adds 6 packages and a link (README, "Prerequisites").
KUBE_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
missing=()
for bin in "${KUBE_BINARIES[@]}"; do
  have "$bin" "$KUBE_VERSION" || missing+=("$bin")
done

if [ ${#missing[@]} -eq 0 ] && have etcd "${ETCD_VERSION#v}"; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$OUT"
export CGO_ENABLED=0 GOFLAGS="-mod=mod" GOWORK=off
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if [ ${#missing[@]} -gt 0 ]; then
  log "building ${missing[*]} $KUBE_VERSION from source (cold: ~6-8 min for kube-apiserver on 2 cores, kube-controller-manager ~2 min more, kube-scheduler under a minute; warm: seconds)"
  mkdir -p "$work/kubernetes"
  cd "$work/kubernetes"
  cat > go.mod <<MOD
module mpiguard.local/kubernetes-wrapper

go 1.26

require k8s.io/kubernetes $KUBE_VERSION
MOD
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for bin in "${KUBE_BINARIES[@]}"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$bin"; done
    printf ')\n'
  } > tools.go
  log "resolving k8s.io/kubernetes $KUBE_VERSION module graph"
  go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" >/dev/null
  kdir="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
  # ./staging paths; a consumer must replace each with the published release.
  for m in $(grep -E '^\s+k8s.io/[a-z0-9-]+ v0\.0\.0$' "$kdir" | awk '{print $1}'); do
    echo "replace $m => $m $STAGING_VERSION" >> go.mod
  done
  go mod tidy -e >/dev/null 2>&1 || true
  log "downloading modules"
  go mod download 2>&1 | sed 's/^/[controlplane]   /' >&2 || true
  log "compiling ${missing[*]}"
  pkgs=()
  for bin in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$bin"); done
  mkdir -p "$work/bin"
  go build -trimpath -tags tools \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(echo "$KUBE_VERSION" | cut -d. -f2)" \
    -o "$work/bin/" "${pkgs[@]}"
  for bin in "${missing[@]}"; do
    mv "$work/bin/$bin" "$OUT/$bin.tmp" && mv "$OUT/$bin.tmp" "$OUT/$bin"
    log "$bin ready: $(have "$bin" "$KUBE_VERSION" && echo "$KUBE_VERSION")"
  done
fi

if ! have etcd "${ETCD_VERSION#v}"; then
  log "building etcd $ETCD_VERSION from source"
  mkdir -p "$work/etcd"
  cd "$work/etcd"
  cat > go.mod <<MOD
module mpiguard.local/etcd-wrapper

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat > tools.go <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  go mod tidy -e >/dev/null 2>&1 || true
  log "compiling etcd"
  go build -trimpath -ldflags "-s -w" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$OUT/etcd.tmp" "$OUT/etcd"
  log "etcd ready: $("$OUT/etcd" --version | head -1)"
fi

echo "$OUT"
