#!/usr/bin/env bash
# test-arm64.sh: gpurent as a linux/arm64 program, on this amd64 machine,
# under qemu-user. GPU machines are not all x86: Grace Hopper (GH200) and
# AWS's Graviton GPU instances are arm64, and there gpurent's calls into C
# (purego: NVML, the CUDA driver, cuBLASLt) follow another calling
# convention, which no amd64 test exercises. This runs:
#   - the CGO_ENABLED=0 arm64 binary: it starts, pins no glibc version,
#     quotes the embedded catalog and benches a machine without a GPU;
#   - the tests of the packages that call C, and the CLI's tests on
#     simulated drivers, built for arm64: the simulated libraries are
#     compiled with the arm64 cross compiler, and the real arm64 builds of
#     NVIDIA's drivers 550, 535 and 470 and of cuBLASLt (Debian non-free,
#     scripts/nvidia-debs.sh arm64) are loaded and must fail cleanly with no
#     GPU; the header comparisons are compiled and run as arm64 programs.
# The rest of the suite is pure Go, the same on both.
# It needs qemu-user registered with binfmt_misc (so that a test can start
# an arm64 program) and gcc/g++-aarch64-linux-gnu; .ci/run installs them.
# Where they are missing it says the arm64 tests did not run, and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

prefix=/usr/aarch64-linux-gnu # the cross toolchain's arm64 libc, where qemu looks for it
missing=()
for c in aarch64-linux-gnu-gcc aarch64-linux-gnu-g++ aarch64-linux-gnu-objdump; do
  command -v "$c" >/dev/null || missing+=("$c")
done
[ -e "$prefix/lib/ld-linux-aarch64.so.1" ] || missing+=("$prefix/lib/ld-linux-aarch64.so.1")
if [ ${#missing[@]} -gt 0 ]; then
  echo "test-arm64.sh: the linux/arm64 tests did not run: missing ${missing[*]} (Debian's gcc-aarch64-linux-gnu, g++-aarch64-linux-gnu, qemu-user and qemu-user-binfmt; .ci/run installs them)" >&2
  exit 0
fi
export QEMU_LD_PREFIX="$prefix" CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -o "$tmp/gpurent" ./cmd/gpurent
if ! version=$("$tmp/gpurent" --version 2>&1); then
  echo "test-arm64.sh: the linux/arm64 tests did not run: this machine cannot start an arm64 program (qemu-user registered with binfmt_misc): $version" >&2
  exit 0
fi
echo "test-arm64.sh: $version, linux/arm64 under qemu-user"
if aarch64-linux-gnu-objdump -T "$tmp/gpurent" | grep -q 'GLIBC_'; then
  echo "the arm64 gpurent requires versioned glibc symbols:"; aarch64-linux-gnu-objdump -T "$tmp/gpurent" | grep 'GLIBC_' | head; exit 1
fi
"$tmp/gpurent" quote --gpu GH200 --hours 100 -o json >"$tmp/quote.json"
grep -q '"lambda-gpu_1x_gh200"' "$tmp/quote.json" || { echo "arm64 quote has no GH200 offer"; exit 1; }
"$tmp/gpurent" bench --no-history --duration 1s --disk-mb 16 --data-dir "$tmp" >"$tmp/bench.txt"
grep -q "no NVIDIA GPU was found" "$tmp/bench.txt" || { echo "arm64 bench:"; cat "$tmp/bench.txt"; exit 1; }
# The static build (-tags nogpu, README) starts with no loader to find:
# run without QEMU_LD_PREFIX, where the standard one cannot start.
GOARCH=arm64 CGO_ENABLED=0 go build -trimpath -tags nogpu -o "$tmp/gpurent-static" ./cmd/gpurent
env -u QEMU_LD_PREFIX "$tmp/gpurent-static" quote --gpu GH200 --hours 100 -o json >"$tmp/quote-static.json"
cmp -s "$tmp/quote.json" "$tmp/quote-static.json" || { echo "the arm64 static build quotes otherwise than the standard one"; exit 1; }

# NVIDIA's tools and headers are amd64's (they run on, or are read by, this
# machine); the libraries gpurent loads are arm64's.
if command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null && [ ! -r /usr/share/keyrings/debian-archive-keyring.gpg ]; then
  echo "test-arm64.sh: no Debian archive keyring (apt-get install debian-archive-keyring): the arm64 tests against NVIDIA's own libraries will say they did not run" >&2
elif command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null; then
  eval "$(bash scripts/nvidia-debs.sh)"
  eval "$(bash scripts/nvidia-debs.sh arm64)"
else
  echo "test-arm64.sh: no apt-get here: the arm64 tests against NVIDIA's own libraries will say they did not run" >&2
fi
export GOARCH=arm64
go test -timeout 20m "$@" ./internal/dl/... ./internal/compute/... ./internal/probe/... ./internal/gpuwatch/... ./internal/bench/...
# gpu-check.sh's simulated run is the amd64 device machine's script, and
# takes four minutes under qemu: left to the amd64 run.
go test -timeout 20m "$@" -run 'Simulated|GPU' -skip '^TestGPUCheckSimulated$' ./cmd/gpurent
