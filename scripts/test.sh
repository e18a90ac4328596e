#!/usr/bin/env bash
# test.sh: the whole test suite, with the real services the tests need.
# It builds SeaweedFS (the S3 server the store tests run against) from the Go
# module proxy once, caches the binary, does the same for fake-gcs-server and
# Azurite (npm), and runs go test with the race detector. Extra arguments go
# to go test (e.g. -run TestRoundTrip).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

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
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  nvidia_env=$(bash scripts/nvidia-debs.sh)
  eval "$nvidia_env"
else
  echo "test.sh: no apt-get here: the tests against NVIDIA's own tools and libraries will say they did not run" >&2
fi
go test -race -timeout 30m "$@" ./...
# Memory limits are judged without the race detector, which inflates memory.
if [ $# -eq 0 ]; then
  # Every test file's lines: a failure in a helper (the S3 server's start)
  # must show why.
  go test -timeout 20m -run 'TestLargeFileMemory' -v ./internal/store | grep -E '^(=== RUN|--- |\s+\w+_test\.go:|ok|FAIL|PASS)'
  # The packages that call C, again as linux/arm64 programs under qemu-user
  # (GH200 and Graviton GPU machines are arm64).
  bash scripts/test-arm64.sh
fi
