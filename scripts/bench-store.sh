#!/usr/bin/env bash
# bench-store.sh: gpurent ckpt push/pull side by side with rclone (plain),
# restic (encrypted) and aws s3 cp, on a local directory and on SeaweedFS's
# S3 server on loopback, in one run. Data: 2 GiB of incompressible bytes laid
# out like a checkpoint (one 1.5 GiB file and 200 small ones). For each
# command: wall seconds, MB/s (2 GiB / seconds) and peak RSS (GNU time).
# The machines are shared and noisy, so every tool runs ROUNDS times, the
# tools' order rotating from round to round, each round on fresh stores; the
# summary gives the median of each and the ratios between medians. With the
# set, each round then pushes again with one of the 201 files replaced
# ("push2"), and once more with nothing changed ("push3"): seconds, and how
# much each tool's store grew (du, or rclone size on S3).
# SHAPE "set" is that 2 GiB set; "big" is one 8 GiB file. gpurent's pull
# fsyncs what it wrote and rclone's does not, so rclone's pull is timed with
# a sync after it ("+ sync"), as the durable copy gpurent makes.
#   bash scripts/bench-store.sh [WORKDIR] [ROUNDS] [SHAPE]   (set: ~16 GB free there; big: ~60 GB;
#   tiny: the set at 1/64, to check the script)
# Peers come from Debian's packages: apt-get install rclone restic awscli time
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
work=${1:-$(mktemp -d /tmp/gpurent-bench-store.XXXX)}
rounds=${2:-3}
shape=${3:-set}
mkdir -p "$work"
export PATH="$PATH:/usr/local/go/bin"
AWS=$(command -v /usr/bin/aws || true)
tools=(gpurent rclone restic)
[ -n "$AWS" ] && tools+=(aws) # Debian's awscli; left out where it is not installed
for tool in rclone restic /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install rclone restic awscli time" >&2; exit 1; }
done
unset AWS_CA_BUNDLE # Debian's rclone 1.60 refuses to start with it set (DESIGN.md)

CGO_ENABLED=0 go build -o "$work/gpurent" ./cmd/gpurent

# Data, once: incompressible bytes.
data="$work/data-$shape"
case "$shape" in
  set)
    if [ ! -f "$data/model.pt" ]; then
      mkdir -p "$data/shards"
      head -c $((1536 << 20)) /dev/urandom >"$data/model.pt"
      for i in $(seq -w 1 200); do head -c $(( (512 << 20) / 200 )) /dev/urandom >"$data/shards/part-$i.bin"; done
    fi ;;
  tiny) # the set at 1/64 of its size: to check this script, not to measure
    if [ ! -f "$data/model.pt" ]; then
      mkdir -p "$data/shards"
      head -c $((24 << 20)) /dev/urandom >"$data/model.pt"
      for i in $(seq -w 1 200); do head -c $(( (8 << 20) / 200 )) /dev/urandom >"$data/shards/part-$i.bin"; done
    fi ;;
  big)
    if [ ! -f "$data/model.pt" ]; then
      mkdir -p "$data"
      head -c $((8192 << 20)) /dev/urandom >"$data/model.pt"
    fi ;;
  *) echo "SHAPE: set, tiny or big, not $shape" >&2; exit 2 ;;
esac
bytes=$(du -sb "$data" | cut -f1)

# SeaweedFS on loopback, started afresh each round.
. scripts/weed.sh

export XDG_CONFIG_HOME="$work/cfg" RESTIC_PASSWORD=bench-password
[ -f "$work/cfg/gpurent/identity.txt" ] || "$work/gpurent" keygen >/dev/null 2>&1
export RCLONE_CONFIG_WEED_TYPE=s3 RCLONE_CONFIG_WEED_PROVIDER=SeaweedFS \
  RCLONE_CONFIG_WEED_ACCESS_KEY_ID=bench RCLONE_CONFIG_WEED_SECRET_ACCESS_KEY=bench RCLONE_CONFIG_WEED_REGION=us-east-1

results="$work/results.md" raw="$work/raw.tsv"
echo "| round | target | tool | op | seconds | MB/s | peak RSS MiB |" >"$results"
echo "|---|---|---|---|---|---|---|" >>"$results"
: >"$raw"
run() { # target tool op command...
  local target=$1 tool=$2 op=$3; shift 3
  sync
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >"$work/last.log" 2>&1 || { echo "FAILED: $*" >&2; tail -5 "$work/last.log" >&2; return 1; }
  read -r secs kb <"$work/time.txt"
  printf '%s\t%s\t%s\t%s\t%s\n' "$target" "$tool" "$op" "$secs" "$kb" >>"$raw"
  awk -v r="$round" -v t="$target" -v tool="$tool" -v op="$op" -v s="$secs" -v kb="$kb" -v b="$bytes" \
    'BEGIN { printf "| %s | %s | %s | %s | %.2f | %.0f | %.0f |\n", r, t, tool, op, s, b / 1e6 / s, kb / 1024 }' | tee -a "$results"
}
out() { rm -rf "$work/out"; echo "$work/out"; }

# One tool's push or pull on one target, by name.
op() { # target tool op
  local target=$1 tool=$2 o=$3 L="$work/local"
  case "$target/$tool/${o%[23]}" in
    local/gpurent/push) run local "gpurent (age)" "$o" "$work/gpurent" ckpt push "$data" --store "$L/gpurent" --run b ;;
    local/gpurent/pull) run local "gpurent (age)" "$o" "$work/gpurent" ckpt pull "$(out)" --store "$L/gpurent" --run b ;;
    local/rclone/push) run local "rclone (plain)" "$o" rclone copy "$data" "$L/rclone" ;;
    local/rclone/pull) run local "rclone (plain)" "$o" sh -c 'rclone copy "$1" "$2" && sync' - "$L/rclone" "$(out)" ;;
    local/restic/push) run local "restic (encrypted)" "$o" restic -r "$L/restic" backup "$data" ;;
    local/restic/pull) run local "restic (encrypted)" "$o" restic -r "$L/restic" restore latest --target "$(out)" ;;
    s3/gpurent/push) run s3 "gpurent (age)" "$o" "$work/gpurent" ckpt push "$data" --store "s3://gpurent/b?$s3url" --run b ;;
    s3/gpurent/pull) run s3 "gpurent (age)" "$o" "$work/gpurent" ckpt pull "$(out)" --store "s3://gpurent/b?$s3url" --run b ;;
    s3/rclone/push) run s3 "rclone (plain)" "$o" rclone copy "$data" weed:rclone/b ;;
    s3/rclone/pull) run s3 "rclone (plain)" "$o" sh -c 'rclone copy "$1" "$2" && sync' - weed:rclone/b "$(out)" ;;
    s3/restic/push) run s3 "restic (encrypted)" "$o" restic -r "s3:$ep/restic/b" backup "$data" ;;
    s3/restic/pull) run s3 "restic (encrypted)" "$o" restic -r "s3:$ep/restic/b" restore latest --target "$(out)" ;;
    s3/aws/push) run s3 "aws s3 cp (plain)" "$o" "$AWS" --endpoint-url "$ep" s3 cp --recursive --quiet "$data" s3://aws/b ;;
    s3/aws/pull) run s3 "aws s3 cp (plain)" "$o" "$AWS" --endpoint-url "$ep" s3 cp --recursive --quiet s3://aws/b "$(out)" ;;
  esac
}

# How many bytes a tool's store holds.
stored() { # target tool
  local dir
  case $2 in gpurent) dir=gpurent ;; rclone) dir=rclone ;; restic) dir=restic ;; *) echo 0; return ;; esac
  if [ "$1" = local ]; then du -sb "$work/local/$dir" | cut -f1
  else rclone size --json "weed:$dir/b" | sed 's/.*"bytes":\([0-9]*\).*/\1/'; fi
}

# The second push, one of 201 files replaced, and the third, nothing
# changed: seconds and the store's growth, for the tools that keep what
# they stored (aws s3 cp copies everything again by design).
again() { # target
  [ "$shape" != big ] || return 0
  local f="$data/shards/part-$(printf %03d $(( (round % 200) + 1 )))".bin
  head -c "$(stat -c %s "$f")" /dev/urandom >"$f.new" && mv "$f.new" "$f"
  for o in push2 push3; do for t in "${order[@]}"; do
    [ "$t" = aws ] && continue
    local before after
    before=$(stored "$1" "$t")
    op "$1" "$t" "$o"
    after=$(stored "$1" "$t")
    printf '%s\t%s\t%s\t%s\n' "$1" "$t" "$o" "$((after - before))" >>"$grew"
  done; done
}
grew="$work/grew.tsv"
: >"$grew"

for round in $(seq 1 "$rounds"); do
  # Rotate the order each round, so no tool always runs first (cold) or last.
  k=$(( (round - 1) % ${#tools[@]} ))
  order=("${tools[@]:k}" "${tools[@]:0:k}")
  # Fresh stores each round: restic would otherwise deduplicate the second backup.
  rm -rf "$work/local"; mkdir -p "$work/local"
  restic -r "$work/local/restic" init >/dev/null
  for o in push pull; do for t in "${order[@]}"; do [ "$t" = aws ] || op local "$t" "$o"; done; done
  again local
  rm -rf "$work/local"
  start_weed "$work"
  make_buckets gpurent rclone restic aws
  export RCLONE_CONFIG_WEED_ENDPOINT="$ep"
  s3url="endpoint=$ep&region=us-east-1&use_path_style=true"
  restic -r "s3:$ep/restic/b" init >/dev/null
  for o in push pull; do for t in "${order[@]}"; do op s3 "$t" "$o"; done; done
  again s3
  stop_weed "$work"
done

# Medians and the ratios the targets are stated in.
echo
echo "| target | tool | op | median seconds | median MB/s | max peak RSS MiB | runs |" | tee -a "$results"
echo "|---|---|---|---|---|---|---|" | tee -a "$results"
sort -t $'\t' -k1,1 -k2,2 -k3,3 -k4,4n "$raw" | awk -F '\t' -v b="$bytes" '
  function flush() { if (n) { m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      printf "| %s | %s | %s | %.2f | %.0f | %.0f | %d |\n", pt, pl, po, m, b / 1e6 / m, rss / 1024, n
      med[pt "|" pl "|" po] = m } n = 0; rss = 0 }
  { if ($1 != pt || $2 != pl || $3 != po) { flush(); pt = $1; pl = $2; po = $3 } v[++n] = $4; if ($5 > rss) rss = $5 }
  END { flush()
    split("local s3", ts, " "); split("push pull", os, " ")
    print ""
    for (i = 1; i <= 2; i++) for (j = 1; j <= 2; j++) {
      g = med[ts[i] "|gpurent (age)|" os[j]]; r = med[ts[i] "|rclone (plain)|" os[j]]; s = med[ts[i] "|restic (encrypted)|" os[j]]
      printf "%s %s: gpurent / rclone throughput %.2f (target >= 1)", ts[i], os[j], r / g
      if (os[j] == "push") printf ", gpurent / restic backup %.2f (target >= 1.5)", s / g
      printf "\n"
    } }' | tee -a "$results"

if [ -s "$grew" ]; then
  echo
  echo "push2: one of the 201 files replaced; push3: nothing changed. Medians." | tee -a "$results"
  echo "| target | tool | op | median seconds | median store growth bytes | runs |" | tee -a "$results"
  echo "|---|---|---|---|---|---|" | tee -a "$results"
  # seconds from raw, growth from grew, by target, tool label and op.
  awk -F '\t' '
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    FNR == NR { if ($3 ~ /^push[23]$/) { k = $1 "|" $2 "|" $3; s[k, ++ns[k]] = $4 } next }
    { name = ($2 == "gpurent") ? "gpurent (age)" : ($2 == "rclone") ? "rclone (plain)" : "restic (encrypted)"
      k = $1 "|" name "|" $3; g[k, ++ng[k]] = $4; keys[k] = 1 }
    END { split("local s3", ts, " "); split("gpurent (age)|rclone (plain)|restic (encrypted)", tl, "|"); split("push2 push3", os, " ")
      for (i = 1; i <= 2; i++) for (l = 1; l <= 3; l++) for (j = 1; j <= 2; j++) { k = ts[i] "|" tl[l] "|" os[j]
        if (!(k in keys)) continue
        delete a; delete b
        for (m = 1; m <= ns[k]; m++) a[m] = s[k, m]; for (m = 1; m <= ng[k]; m++) b[m] = g[k, m]
        ms[k] = med(a, ns[k]); mg[k] = med(b, ng[k])
        printf "| %s | %s | %s | %.2f | %d | %d |\n", ts[i], tl[l], os[j], ms[k], mg[k], ng[k] }
      print ""
      for (i = 1; i <= 2; i++) for (j = 1; j <= 2; j++) { gk = ts[i] "|gpurent (age)|" os[j]; rk = ts[i] "|restic (encrypted)|" os[j]
        if (!(gk in ms) || !(rk in ms)) continue
        printf "%s %s: gpurent / restic time %.2f (target <= 2), store growth %d / %d bytes (target <= 2x)\n", ts[i], os[j], ms[gk] / ms[rk], mg[gk], mg[rk] } }
  ' "$raw" "$grew" | tee -a "$results"
fi

echo
echo "data ($shape): $bytes bytes; versions: $(rclone version | head -1), $(restic version | cut -d' ' -f1-2)${AWS:+, $("$AWS" --version 2>&1 | cut -d" " -f1)}"
echo "results in $results"
