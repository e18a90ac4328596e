#!/usr/bin/env bash
# nvidia-debs.sh: NVIDIA's own tools and driver libraries from Debian's
# non-free archive, for the tests that check gpurent's GPU code against them
# on a machine without a GPU:
#   - ptxas, cuobjdump and nvdisasm (nvidia-cuda-toolkit, CUDA 11.8): the committed PTX
#     must assemble for every architecture it is loaded on, and the SASS it
#     becomes must be the register-resident loops the probes' arithmetic
#     assumes;
#   - libcuda.so.1 and libnvidia-ml.so.1 of the 535 (CUDA 12.2) and Tesla 470
#     (CUDA 11.4) drivers: every symbol gpurent binds must be there or have a
#     fallback, and with no kernel driver both loaders must fail with a
#     sentence, never a panic.
# The packages are downloaded and unpacked into a cache, never installed: the
# machine's apt configuration is untouched (apt runs on a private sources
# list and state). It prints the environment the tests read, as shell
# assignments, on stdout. Usage: eval "$(bash scripts/nvidia-debs.sh)"
set -euo pipefail

cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/nvidia-debs"
toolkit=nvidia-cuda-toolkit
drivers=(libcuda1 libnvidia-ml1 libnvidia-tesla-470-cuda1 libnvidia-tesla-470-ml1)

if [ ! -x "$cache/root/usr/bin/nvdisasm" ] || [ ! -e "$cache/root/usr/lib/x86_64-linux-gnu/nvidia/tesla-470/libcuda.so.1" ]; then
  command -v apt-get >/dev/null || { echo "nvidia-debs.sh: no apt-get here" >&2; exit 1; }
  echo "nvidia-debs.sh: downloading ptxas and NVIDIA driver libraries from Debian non-free once (about 100 MB)" >&2
  state="$cache/apt"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$cache/debs"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free" >"$state/sources.list"
  opts=(-o "Dir::Etc::SourceList=$state/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o Debug::NoLocking=1
    -o APT::Sandbox::User=root -qq)
  apt-get "${opts[@]}" update >&2
  rm -f "$cache"/debs/*.deb
  # apt-get download checks each file against the archive's signed hashes.
  (cd "$cache/debs" && apt-get "${opts[@]}" download "$toolkit" "${drivers[@]}" >&2)
  rm -rf "$cache/root.tmp"
  for deb in "$cache"/debs/*.deb; do
    dpkg-deb -x "$deb" "$cache/root.tmp"
  done
  rm -rf "$cache/root" "$cache/debs"
  mv "$cache/root.tmp" "$cache/root"
  # Keep only what the tests use (the toolkit's package is 170 MB unpacked).
  find "$cache/root/usr/bin" -type f ! -name ptxas ! -name cuobjdump ! -name nvdisasm -delete
  rm -rf "$cache/root/usr/share" "$cache/root/usr/lib/nvidia-cuda-toolkit" "$cache/root/usr/include"
fi

lib="$cache/root/usr/lib/x86_64-linux-gnu/nvidia"
echo "export GPURENT_CUDA_TOOLS='$cache/root/usr/bin'"
echo "export GPURENT_NVIDIA_DRIVERS='$lib/current:$lib/tesla-470'"
