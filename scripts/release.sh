#!/usr/bin/env bash
# release.sh: the binaries to copy onto a rented machine that has no Go,
# one per platform, static (CGO_ENABLED=0), built with -trimpath so that two
# builds of one commit are byte-identical, the commit stamped in by Go's
# build info (gpurent --version prints it), and SHA256SUMS beside them.
#
#   bash scripts/release.sh [DIR]          # DIR defaults to dist/
#   TARGETS=linux/amd64 bash scripts/release.sh /tmp/a   # some targets only
#   PACKAGES=0 bash scripts/release.sh     # the binaries only, no .deb or .rpm
#
# For each Linux target it also builds .deb and .rpm packages with nfpm
# (built once from the Go module proxy and cached): the binary as
# /usr/bin/gpurent, man pages (gpurent gendocs) and bash, zsh and fish
# completion.
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
# build NAME ARGS...: one go build, with a line when it starts and one
# every 30 s while it runs (a cold build of a platform takes minutes of
# silence otherwise), on stderr.
n=$(echo $targets | wc -w) i=0 start=$(date +%s)
build() {
  local name=$1 t0=$(date +%s)
  shift
  echo "release.sh: [$i/$n] building $name" >&2
  "$@" &
  local pid=$!
  while ! wait_for "$pid" 30; do
    echo "release.sh: [$i/$n] still building $name ($(($(date +%s) - t0)) s)" >&2
  done
  wait "$pid"
  echo "release.sh: [$i/$n] $name in $(($(date +%s) - t0)) s" >&2
}
# wait_for PID SECONDS: true once PID has ended, false after SECONDS.
wait_for() {
  local k
  for ((k = 0; k < $2; k++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 1
  done
  ! kill -0 "$1" 2>/dev/null
}
# packages DIR: .deb and .rpm of each Linux binary in DIR.
packages() {
  local dir=$1 nfpm_version=v2.45.2
  local bindir="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/nfpm-$nfpm_version"
  if [ ! -x "$bindir/nfpm" ]; then
    echo "release.sh: building nfpm $nfpm_version once, for the .deb and .rpm packages" >&2
    (cd /tmp && GOFLAGS= GOBIN="$bindir" go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$nfpm_version")
  fi
  local work
  work=$(mktemp -d)
  # The man pages and completions come from this commit's own commands,
  # dated by its commit so that two builds are the same.
  export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
  # The binary just built for this machine writes them, when one was.
  local host
  host="$dir/gpurent-$(go env GOOS)-$(go env GOARCH)"
  if [ -x "$host" ]; then
    cp "$host" "$work/gpurent"
  else
    go build -o "$work/gpurent" ./cmd/gpurent
  fi
  "$work/gpurent" --lang en gendocs "$work/docs" >/dev/null
  gzip -n -9 "$work"/docs/man1/*.1
  "$work/gpurent" completion bash >"$work/gpurent.bash"
  "$work/gpurent" completion zsh >"$work/_gpurent"
  "$work/gpurent" completion fish >"$work/gpurent.fish"
  local version
  version=$("$work/gpurent" --version | awk '{print $2}' | tr -d ,)
  for bin in "$dir"/gpurent-linux-amd64 "$dir"/gpurent-linux-arm64; do
    [ -f "$bin" ] || continue
    local arch=${bin##*-}
    {
      echo "name: gpurent"
      echo "arch: $arch"
      echo "platform: linux"
      echo "version: $version"
      echo "section: utils"
      echo "maintainer: gpurent developers"
      echo "homepage: https://github.com/gpurent/gpurent"
      echo "license: Apache-2.0"
      echo "description: The true bill, an acceptance test and safe checkpoints for rented GPUs"
      echo "contents:"
      echo "  - {src: $bin, dst: /usr/bin/gpurent, file_info: {mode: 0755}}"
      for m in "$work"/docs/man1/*.1.gz; do
        echo "  - {src: $m, dst: /usr/share/man/man1/$(basename "$m")}"
      done
      echo "  - {src: $work/gpurent.bash, dst: /usr/share/bash-completion/completions/gpurent}"
      echo "  - {src: $work/_gpurent, dst: /usr/share/zsh/vendor-completions/_gpurent}"
      echo "  - {src: $work/gpurent.fish, dst: /usr/share/fish/vendor_completions.d/gpurent.fish}"
    } >"$work/nfpm-$arch.yaml"
    for kind in deb rpm; do
      build "gpurent $kind ($arch)" "$bindir/nfpm" package --config "$work/nfpm-$arch.yaml" --packager "$kind" --target "$dir"
    done
  done
  rm -rf "$work"
}
for target in $targets; do
  os=${target%/*} arch=${target#*/} ext=
  i=$((i + 1))
  [ "$os" = windows ] && ext=.exe
  build "gpurent-$os-$arch$ext" env GOOS="$os" GOARCH="$arch" CGO_ENABLED=0 go build -trimpath -buildvcs=true -ldflags='-s -w' -o "$out/gpurent-$os-$arch$ext" ./cmd/gpurent
  if [ "$target" = linux/amd64 ]; then
    build gpurent-linux-amd64-nogpu env GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -buildvcs=true -ldflags='-s -w' -tags nogpu -o "$out/gpurent-linux-amd64-nogpu" ./cmd/gpurent
  fi
done
# install.sh goes beside the binaries: it checks one against SHA256SUMS
# before installing it.
cp scripts/install.sh "$out/install.sh"
if [ "${PACKAGES:-1}" = 1 ] && [[ " $targets " == *" linux/"* ]]; then
  packages "$out"
fi
(cd "$out" && sha256sum gpurent-* $(ls gpurent_* 2>/dev/null) >SHA256SUMS)
echo "release.sh: $n platforms in $(($(date +%s) - start)) s" >&2
cat "$out/SHA256SUMS"
