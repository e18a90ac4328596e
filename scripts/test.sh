#!/usr/bin/env bash
# test.sh: the whole test suite, with the real services the tests need.
# It builds SeaweedFS (the S3 server the store tests run against) from the Go
# module proxy once, caches the binary, does the same for fake-gcs-server and
# Azurite (npm), and runs go test with the race detector. Extra arguments go
# to go test (e.g. -run TestRoundTrip).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

# What the suite needs, checked before anything is built: a missing
# compiler would otherwise stop it after minutes of building SeaweedFS.
os=unknown
[ -r /etc/os-release ] && os=$(. /etc/os-release && echo "${PRETTY_NAME:-$ID}")
missing=()
command -v go >/dev/null || missing+=("go (1.26 or newer, https://go.dev/dl, on PATH)")
command -v gcc >/dev/null || missing+=("gcc (go test -race needs cgo: apt-get install gcc)")
command -v clang-19 >/dev/null || command -v clang >/dev/null || missing+=("clang (the GPU kernels' host test: apt-get install clang-19, or clang)")
command -v git >/dev/null || missing+=("git (apt-get install git)")
if [ ${#missing[@]} -gt 0 ]; then
  line=$(printf '%s; ' "${missing[@]}")
  echo "test.sh: on $os, missing: ${line%; }" >&2
  exit 1
fi
cachedir="${XDG_CACHE_HOME:-$HOME/.cache}"
mkdir -p "$cachedir"
free_kb=$(df -Pk "$cachedir" | awk 'NR==2 {print $4}')
if [ "${free_kb:-0}" -lt $((6 * 1024 * 1024)) ]; then
  echo "test.sh: on $os, $cachedir has $((free_kb / 1024)) MiB free; the builds, SeaweedFS and NVIDIA's libraries need about 6 GiB" >&2
  exit 1
fi
echo "test.sh: on $os, $(go env GOVERSION), $(nproc) cores" >&2

WEED_MODULE=github.com/seaweedfs/seaweedfs
WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/weed-$WEED_VERSION"
if [ ! -x "$cache/weed" ]; then
  echo "test.sh: building SeaweedFS $WEED_VERSION once (6 to 12 minutes on 2 cores)" >&2
  mkdir -p "$cache"
  # go install refuses the module (its go.mod has replace directives):
  # download it, copy it somewhere writable and build it there.
  dir=$(cd /tmp && GOFLAGS= go mod download -json "$WEED_MODULE@$WEED_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || { echo "test.sh: could not download $WEED_MODULE@$WEED_VERSION" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -r "$dir" "$work/src"
  chmod -R u+w "$work/src"
  (cd "$work/src" && GOFLAGS= go build -o "$cache/weed.tmp" ./weed)
  mv "$cache/weed.tmp" "$cache/weed"
fi
export GPURENT_WEED="$cache/weed"

# The gs:// and azblob:// store tests run against fake-gcs-server (built from
# the Go module proxy) and Azurite (from npm), each installed once.
FAKE_GCS_VERSION=v1.56.1
gcs="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/fake-gcs-server-$FAKE_GCS_VERSION"
if [ ! -x "$gcs/fake-gcs-server" ]; then
  echo "test.sh: building fake-gcs-server $FAKE_GCS_VERSION once (about 2 minutes on 2 cores)" >&2
  mkdir -p "$gcs"
  (cd /tmp && GOFLAGS= GOBIN="$gcs" go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION")
fi
export GPURENT_FAKE_GCS="$gcs/fake-gcs-server"
AZURITE_VERSION=3.37.0
az="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/azurite-$AZURITE_VERSION"
if [ ! -x "$az/node_modules/.bin/azurite-blob" ]; then
  if command -v npm >/dev/null; then
    echo "test.sh: installing Azurite $AZURITE_VERSION from npm once" >&2
    mkdir -p "$az"
    npm install --prefix "$az" --no-audit --no-fund --loglevel=error "azurite@$AZURITE_VERSION" >/dev/null
  else
    echo "test.sh: no npm here: the azblob:// store tests will say they did not run" >&2
  fi
fi
if [ -x "$az/node_modules/.bin/azurite-blob" ]; then
  export GPURENT_AZURITE="$az/node_modules/.bin/azurite-blob"
fi
# NVIDIA's ptxas, cuBLASLt, headers and driver libraries, for the tests that
# check the GPU code against them without a GPU (Debian non-free, downloaded
# once through apt, not installed).
# apt checks the archive's signatures with Debian's keyring, which Ubuntu
# ships only as a package of its own.
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null && [ ! -r "$keyring" ]; then
  echo "test.sh: on $os, no $keyring (apt-get install debian-archive-keyring): the tests against NVIDIA's own tools and libraries will say they did not run" >&2
elif command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  nvidia_env=$(bash scripts/nvidia-debs.sh)
  eval "$nvidia_env"
else
  echo "test.sh: no apt-get here: the tests against NVIDIA's own tools and libraries will say they did not run" >&2
fi
# Three packages at a time at least: the longest (cmd, store, supervise)
# wait on processes and servers most of their time, and go test's default
# of one per core left CI's two cores idle behind them.
procs=$(nproc)
[ "$procs" -ge 3 ] || procs=3
t0=$SECONDS
go test -race -p "$procs" -timeout 30m "$@" ./...
echo "test.sh: the race run took $((SECONDS - t0)) s" >&2
# Memory limits are judged without the race detector, which inflates memory.
if [ $# -eq 0 ]; then
  # Every test file's lines: a failure in a helper (the S3 server's start)
  # must show why.
  go test -timeout 20m -run 'TestLargeFileMemory' -v ./internal/store | grep -E '^(=== RUN|--- |\s+\w+_test\.go:|ok|FAIL|PASS)'
  # The packages that call C, again as linux/arm64 programs under qemu-user
  # (GH200 and Graviton GPU machines are arm64).
  t0=$SECONDS
  bash scripts/test-arm64.sh
  echo "test.sh: the arm64 run took $((SECONDS - t0)) s" >&2
fi
