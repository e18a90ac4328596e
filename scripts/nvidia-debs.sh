#!/usr/bin/env bash
# nvidia-debs.sh: NVIDIA's own tools and libraries from Debian's non-free
# archive, for the tests that check gpurent's GPU code against them on a
# machine without a GPU:
#   - ptxas, cuobjdump and nvdisasm (nvidia-cuda-toolkit 12.4, Debian 13):
#     the committed PTX must assemble for every architecture it is loaded on,
#     and the machine code it becomes must be the register-resident loops
#     the probes' arithmetic assumes;
#   - libcuda.so.1 and libnvidia-ml.so.1 of drivers 550 (CUDA 12.4), Tesla
#     535 (12.2) and Tesla 470 (11.4, Debian 12): every symbol gpurent binds
#     must be there or have a fallback, and with no kernel driver both
#     loaders must fail with a sentence, never a panic;
#   - libcublasLt.so.12 (12.4): its version and the GEMM descriptors'
#     attribute sizes as gpurent sets them;
#   - nvml.h, cuda.h and cublasLt.h (libnvidia-ml-dev, nvidia-cuda-dev 12.4:
#     only the headers are kept; libcu++-dev for one they include): the structs, enum values, limits and
#     versioned entry-point names gpurent mirrors, compiled and compared;
#   - nccl.h (libnccl-dev 2.22.3, Debian 13 contrib, in a cache of its
#     own; only the headers are kept): NCCL's result codes and types as
#     gpurent binds them. Its libnccl.so.2 needs glibc 2.38, newer than
#     Debian 12's, so the library itself is left to scripts/gpu-check.sh.
# The packages are downloaded and unpacked into a cache, never installed: the
# machine's apt configuration is untouched (apt runs on a private sources
# list and state). It prints the environment the tests read, as shell
# assignments, on stdout. Usage: eval "$(bash scripts/nvidia-debs.sh)"
#
# With the argument arm64 it fetches the same drivers' and cuBLASLt's arm64
# builds (what a Grace Hopper or Graviton GPU machine has), for the tests
# scripts/test.sh runs as linux/arm64 programs under qemu, and prints only
# the variables that name libraries; the tools and headers stay the
# amd64 run's (they run on, or are read by, this machine).
set -euo pipefail

arch=${1:-amd64}
base="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent"
case "$arch" in
amd64)
  cache="$base/nvidia-debs-5" # a new name when the package list changes
  rm -rf "$base"/nvidia-debs "$base"/nvidia-debs-[1-4]
  triplet=x86_64-linux-gnu
  packages=(nvidia-cuda-toolkit/trixie libcuda1/trixie libnvidia-ml1/trixie
    libnvidia-tesla-535-cuda1/trixie libnvidia-tesla-535-ml1/trixie libcublaslt12/trixie libnvidia-ml-dev/trixie nvidia-cuda-dev/trixie libcu++-dev/trixie
    libnvidia-tesla-470-cuda1/bookworm libnvidia-tesla-470-ml1/bookworm)
  size="1.2 GB; 600 MB are kept"
  ;;
arm64)
  cache="$base/nvidia-debs-arm64-1"
  triplet=aarch64-linux-gnu
  packages=(libcuda1/trixie libnvidia-ml1/trixie libnvidia-tesla-535-cuda1/trixie libnvidia-tesla-535-ml1/trixie
    libcublaslt12/trixie libnvidia-tesla-470-cuda1/bookworm libnvidia-tesla-470-ml1/bookworm)
  size="190 MB; 515 MB are kept"
  ;;
*) echo "nvidia-debs.sh: unknown architecture $arch (amd64 or arm64)" >&2; exit 2 ;;
esac
root="$cache/root"
lib="$root/usr/lib/$triplet"

if [ ! -e "$cache/complete" ]; then
  command -v apt-get >/dev/null || { echo "nvidia-debs.sh: no apt-get here" >&2; exit 1; }
  [ -r /usr/share/keyrings/debian-archive-keyring.gpg ] || { echo "nvidia-debs.sh: no Debian archive keyring to check the packages with (apt-get install debian-archive-keyring)" >&2; exit 1; }
  echo "nvidia-debs.sh: downloading NVIDIA's $arch libraries (and for amd64 ptxas and headers) from Debian non-free once ($size)" >&2
  state="$cache/apt"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$cache/debs"
  # main only for libcu++'s nv/target, which CUDA 12.4's cuda_fp16.h includes.
  for suite in "trixie main non-free" "bookworm non-free"; do
    echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite"
  done >"$state/sources.list"
  opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -qq)
  apt-get "${opts[@]}" update >&2
  rm -f "$cache"/debs/*.deb
  # apt-get download checks each file against the archive's signed hashes.
  (cd "$cache/debs" && apt-get "${opts[@]}" download "${packages[@]/\//:$arch/}" >&2)
  rm -rf "$root.tmp"
  for deb in "$cache"/debs/*.deb; do
    case "$deb" in
    */nvidia-cuda-dev_*) # 2.5 GB of libraries; only the headers are wanted
      mkdir -p "$root.tmp"
      dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root.tmp" --wildcards './usr/include/*' ;;
    *) dpkg-deb -x "$deb" "$root.tmp" ;;
    esac
  done
  rm -rf "$root" "$cache/debs"
  mv "$root.tmp" "$root"
  # Keep only what the tests use (the toolkit's package is 170 MB unpacked).
  if [ -d "$root/usr/bin" ]; then
    find "$root/usr/bin" -type f ! -name ptxas ! -name cuobjdump ! -name nvdisasm -delete
  fi
  rm -rf "$root/usr/share" "$root/usr/lib/nvidia-cuda-toolkit"
  touch "$cache/complete"
fi

# nccl.h (amd64 only): 114 MB downloaded once, 50 KB kept.
nccl="$base/nvidia-nccl-2"
rm -rf "$base/nvidia-nccl-1"
if [ "$arch" = amd64 ] && [ ! -e "$nccl/complete" ]; then
  echo "nvidia-debs.sh: downloading NCCL 2.22.3's headers from Debian contrib once (114 MB; 50 KB are kept)" >&2
  state="$nccl/apt"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$nccl/debs"
  echo "deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie contrib" >"$state/sources.list"
  opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root -o APT::Architecture=amd64 -o APT::Architectures::=amd64 -qq)
  apt-get "${opts[@]}" update >&2
  rm -f "$nccl"/debs/*.deb
  (cd "$nccl/debs" && apt-get "${opts[@]}" download libnccl-dev:amd64/trixie >&2)
  rm -rf "$nccl/root.tmp"
  mkdir -p "$nccl/root.tmp"
  # Of the package (mostly a static library), the headers.
  dpkg-deb --fsys-tarfile "$nccl"/debs/libnccl-dev_*.deb | tar -x -C "$nccl/root.tmp" --wildcards './usr/include/*'
  [ -e "$nccl/root.tmp/usr/include/nccl.h" ] || { echo "nvidia-debs.sh: libnccl-dev has no nccl.h" >&2; exit 1; }
  rm -rf "$nccl/root" "$nccl/debs" "$state"
  mv "$nccl/root.tmp" "$nccl/root"
  touch "$nccl/complete"
fi

if [ "$arch" = amd64 ]; then
  echo "export GPURENT_NCCL_INCLUDE='$nccl/root/usr/include'"
  echo "export GPURENT_CUDA_TOOLS='$root/usr/bin'"
  echo "export GPURENT_NVIDIA_INCLUDE='$root/usr/include'"
fi
echo "export GPURENT_NVIDIA_DRIVERS='$lib/nvidia/current:$lib/nvidia/tesla-535:$lib/nvidia/tesla-470'"
echo "export GPURENT_REAL_CUBLASLT='$lib/libcublasLt.so.12'"
