#!/usr/bin/env bash
# bench-store.sh: gpurent ckpt push/pull side by side with rclone (plain),
# restic (encrypted) and aws s3 cp, on a local directory and on SeaweedFS's
# S3 server on loopback, in one run. Data: 2 GiB of incompressible bytes laid
# out like a checkpoint (one 1.5 GiB file and 200 small ones). For each
# command: wall seconds, MB/s (2 GiB / seconds) and peak RSS (GNU time).
#   bash scripts/bench-store.sh [WORKDIR]     (needs ~12 GB free there)
# Peers come from Debian's packages: apt-get install rclone restic awscli time
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${1:-$(mktemp -d /tmp/gpurent-bench-store.XXXX)}
mkdir -p "$work"
export PATH="$PATH:/usr/local/go/bin"
AWS=$(command -v /usr/bin/aws || command -v aws)
for tool in rclone restic "$AWS" /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install rclone restic awscli time" >&2; exit 1; }
done
unset AWS_CA_BUNDLE # Debian's rclone 1.60 refuses to start with it set (DESIGN.md)

CGO_ENABLED=0 go build -o "$work/gpurent" ./cmd/gpurent

# Data, once: incompressible bytes.
data="$work/data"
if [ ! -f "$data/model.pt" ]; then
  mkdir -p "$data/shards"
  head -c $((1536 << 20)) /dev/urandom >"$data/model.pt"
  for i in $(seq -w 1 200); do head -c $(( (512 << 20) / 200 )) /dev/urandom >"$data/shards/part-$i.bin"; done
fi
bytes=$(du -sb "$data" | cut -f1)

# SeaweedFS on loopback.
. scripts/weed.sh
start_weed "$work"
make_buckets gpurent rclone restic aws

export XDG_CONFIG_HOME="$work/cfg" RESTIC_PASSWORD=bench-password
[ -f "$work/cfg/gpurent/identity.txt" ] || "$work/gpurent" keygen >/dev/null 2>&1
export RCLONE_CONFIG_WEED_TYPE=s3 RCLONE_CONFIG_WEED_PROVIDER=SeaweedFS RCLONE_CONFIG_WEED_ENDPOINT="$ep" \
  RCLONE_CONFIG_WEED_ACCESS_KEY_ID=bench RCLONE_CONFIG_WEED_SECRET_ACCESS_KEY=bench RCLONE_CONFIG_WEED_REGION=us-east-1
s3url="endpoint=$ep&region=us-east-1&use_path_style=true"

results="$work/results.md"
echo "| target | tool | op | seconds | MB/s | peak RSS MiB |" >"$results"
echo "|---|---|---|---|---|---|" >>"$results"
run() { # target tool op command...
  local target=$1 tool=$2 op=$3; shift 3
  sync
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >"$work/last.log" 2>&1 || { echo "FAILED: $*" >&2; tail -5 "$work/last.log" >&2; return 1; }
  read -r secs kb <"$work/time.txt"
  awk -v t="$target" -v tool="$tool" -v op="$op" -v s="$secs" -v kb="$kb" -v b="$bytes" \
    'BEGIN { printf "| %s | %s | %s | %.2f | %.0f | %.0f |\n", t, tool, op, s, b / 1e6 / s, kb / 1024 }' | tee -a "$results"
}
out() { rm -rf "$work/out"; echo "$work/out"; }

# Local directory.
L="$work/local"; rm -rf "$L"; mkdir -p "$L"
run local "gpurent (age)" push "$work/gpurent" ckpt push "$data" --store "$L/gpurent" --run b
run local "gpurent (age)" pull "$work/gpurent" ckpt pull "$(out)" --store "$L/gpurent" --run b
run local "rclone (plain)" push rclone copy "$data" "$L/rclone"
run local "rclone (plain)" pull rclone copy "$L/rclone" "$(out)"
restic -r "$L/restic" init >/dev/null
run local "restic (encrypted)" push restic -r "$L/restic" backup "$data"
run local "restic (encrypted)" pull restic -r "$L/restic" restore latest --target "$(out)"

# SeaweedFS S3 on loopback.
run s3 "gpurent (age)" push "$work/gpurent" ckpt push "$data" --store "s3://gpurent/b?$s3url" --run b
run s3 "gpurent (age)" pull "$work/gpurent" ckpt pull "$(out)" --store "s3://gpurent/b?$s3url" --run b
run s3 "rclone (plain)" push rclone copy "$data" weed:rclone/b
run s3 "rclone (plain)" pull rclone copy weed:rclone/b "$(out)"
restic -r "s3:$ep/restic/b" init >/dev/null
run s3 "restic (encrypted)" push restic -r "s3:$ep/restic/b" backup "$data"
run s3 "restic (encrypted)" pull restic -r "s3:$ep/restic/b" restore latest --target "$(out)"
run s3 "aws s3 cp (plain)" push "$AWS" --endpoint-url "$ep" s3 cp --recursive --quiet "$data" s3://aws/b
run s3 "aws s3 cp (plain)" pull "$AWS" --endpoint-url "$ep" s3 cp --recursive --quiet s3://aws/b "$(out)"

echo
echo "data: $bytes bytes; versions: $(rclone version | head -1), $(restic version | cut -d' ' -f1-2), $("$AWS" --version 2>&1 | cut -d" " -f1)"
echo "results in $results"
