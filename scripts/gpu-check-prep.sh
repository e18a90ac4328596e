#!/usr/bin/env bash
# gpu-check-prep.sh: gets the working tree ready for scripts/gpu-check.sh on
# the project's device machine, where a session is lent a GPU by the minute
# and one failed call can spend what a second try needed. That machine has
# no Go and reaches no module proxy, so gpurent travels built; the tool
# takes at most 64 MiB of working tree, the carried binary included, and the
# standard build (about 68 MiB with its symbol tables) is over that on its
# own. This builds gpurent for linux/amd64 (the machine's processor),
# CGO_ENABLED=0 as shipped, without symbol tables and DWARF (-s -w: about
# 48 MiB; the code is the same), adds up what would travel, fails when it
# is over the limit, and prints the call to make.
#   bash scripts/gpu-check-prep.sh [BINARY]   (default: ./gpurent, which
#                                               .gitignore keeps untracked)
# Exit status: 0 ready, 1 the build failed or the tree is too large.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
bin=${1:-./gpurent}
limit=$((64 << 20))

GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$bin" ./cmd/gpurent
size=$(stat -c %s "$bin")
# What the tool sends: tracked files, and untracked ones git does not ignore
# (the binary is ignored, so it travels only as carried).
tree=$(git ls-files -z --cached --others --exclude-standard |
  xargs -0 -r stat -c %s -- 2>/dev/null | awk '{ s += $1 } END { print s + 0 }') || true
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
total=$((size + tree))
echo "gpurent $(mib "$size") + working tree $(mib "$tree") = $(mib "$total") of the device tool's $(mib "$limit")"
if [ "$total" -ge "$limit" ]; then
  echo "gpu-check-prep.sh: over the device tool's limit: that call would fail before the GPU ran anything" >&2
  exit 1
fi
cat <<'CALL'
device tool run: carry ["gpurent"], timeout_s 540, command:
  timeout 480 bash scripts/gpu-check.sh /tmp/gc; cp /tmp/gc/summary.txt $OUT/; tar -czf $OUT/gc.tgz -C /tmp gc
a second try of some steps only (summary.txt says how long each took):
  GPU_CHECK_STEPS="2 3" timeout 300 bash scripts/gpu-check.sh /tmp/gc; cp /tmp/gc/summary.txt $OUT/; tar -czf $OUT/gc.tgz -C /tmp gc
CALL
