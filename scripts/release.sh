#!/usr/bin/env bash
# release.sh: the binaries to copy onto a rented machine that has no Go,
# one per platform, static (CGO_ENABLED=0), built with -trimpath so that two
# builds of one commit are byte-identical, the commit stamped in by Go's
# build info (gpurent --version prints it), and SHA256SUMS beside them.
#
#   bash scripts/release.sh [DIR]          # DIR defaults to dist/
#   TARGETS=linux/amd64 bash scripts/release.sh /tmp/a   # some targets only
#
# -s -w drops the symbol tables (47.5 instead of 68 MiB for linux/amd64); a
# panic's stack trace still names the functions. gpurent-linux-amd64-nogpu
# is the fully static build for images without glibc's loader (Alpine,
# distroless): everything but NVIDIA's libraries.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
out=${1:-dist}
targets=${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
if ! git diff --quiet HEAD -- 2>/dev/null; then
  echo "release.sh: the work tree has changes: the binaries will say \"modified\" and match no commit" >&2
fi
mkdir -p "$out"
for target in $targets; do
  os=${target%/*} arch=${target#*/} ext=
  [ "$os" = windows ] && ext=.exe
  GOOS=$os GOARCH=$arch CGO_ENABLED=0 go build -trimpath -buildvcs=true -ldflags='-s -w' -o "$out/gpurent-$os-$arch$ext" ./cmd/gpurent
  if [ "$target" = linux/amd64 ]; then
    GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -buildvcs=true -ldflags='-s -w' -tags nogpu -o "$out/gpurent-linux-amd64-nogpu" ./cmd/gpurent
  fi
done
(cd "$out" && sha256sum gpurent-* >SHA256SUMS)
cat "$out/SHA256SUMS"
