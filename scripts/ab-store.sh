#!/usr/bin/env bash
# ab-store.sh: gpurent ckpt push and pull at REV against the working tree's,
# side by side on SeaweedFS's S3 server on loopback, alternating, ROUNDS
# rounds, fresh buckets each time: a change to the store's pipeline is
# measured against what it replaced, in one run. Data: SIZE bytes of
# incompressible data in one file, and a small config. For each: wall
# seconds and peak RSS (GNU time); every pull is compared with the data.
#   bash scripts/ab-store.sh REV [ROUNDS] [SIZE_MB] [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:?REV: the commit to compare with}
rounds=${2:-3}
size=${3:-2200}
work=${4:-$(mktemp -d /tmp/gpurent-ab.XXXX)}
mkdir -p "$work"
git worktree add -f "$work/old" "$rev" -q
(cd "$work/old" && CGO_ENABLED=0 go build -o "$work/gp-old" ./cmd/gpurent)
git worktree remove --force "$work/old"
CGO_ENABLED=0 go build -o "$work/gp-new" ./cmd/gpurent
mkdir -p "$work/data"
[ -f "$work/data/model.bin" ] || head -c $((size * 1000000)) /dev/urandom >"$work/data/model.bin"
echo '{}' >"$work/data/config.json"
. scripts/weed.sh
start_weed "$work"
export XDG_CONFIG_HOME="$work/cfg" XDG_STATE_HOME="$work/state"
[ -f "$work/cfg/gpurent/identity.txt" ] || "$work/gp-new" keygen >/dev/null 2>&1
echo "| round | gpurent | push s | push RSS MiB | pull s | pull RSS MiB |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  for v in old new; do
    b="ab$r$v"; make_buckets "$b"
    s="s3://$b/x?endpoint=$ep&region=us-east-1"
    t0=$(date +%s.%N)
    /usr/bin/time -f "%M" -o "$work/rss" "$work/gp-$v" ckpt push --store "$s" --run r "$work/data" >/dev/null 2>&1
    t1=$(date +%s.%N)
    rm -rf "$work/pull"
    /usr/bin/time -f "%M" -o "$work/rss2" "$work/gp-$v" ckpt pull --store "$s" --run r "$work/pull" >/dev/null 2>&1
    t2=$(date +%s.%N)
    cmp -s "$work/pull/model.bin" "$work/data/model.bin" || { echo "pull of $v differs" >&2; exit 1; }
    label=$v; [ "$v" = old ] && label="$rev"
    printf '| %d | %s | %.1f | %d | %.1f | %d |\n' "$r" "$label" "$(echo "$t1-$t0" | bc)" $(($(cat "$work/rss") / 1024)) "$(echo "$t2-$t1" | bc)" $(($(cat "$work/rss2") / 1024))
    curl -fs -X DELETE "$ep/$b" >/dev/null 2>&1 || true
  done
done
