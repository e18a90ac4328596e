#!/usr/bin/env bash
# bench-preempt.sh: from a spot interruption notice to the committed final
# checkpoint, for checkpoints of 100 MiB and 1 GiB, against SeaweedFS's S3
# server on loopback. A fake AWS metadata service (scripts/fakeimds) serves
# the notice; the trainer, asked by SIGUSR1, writes a Hugging Face style
# checkpoint-N/ (weights, then trainer_state.json); gpurent run uploads it
# (age-encrypted) and exits. Side by side, in the same run: the same write
# followed by rclone copy (plaintext) to the same server, the floor any
# tool that writes and then uploads can reach.
#   bash scripts/bench-preempt.sh [WORKDIR] [ROUNDS]   (needs ~4 GB free)
set -euo pipefail
cd "$(dirname "$0")/.."
work=${1:-$(mktemp -d /tmp/gpurent-bench-preempt.XXXX)}
rounds=${2:-3}
mkdir -p "$work"
export PATH="$PATH:/usr/local/go/bin"
command -v rclone >/dev/null || { echo "missing rclone: apt-get install rclone" >&2; exit 1; }
unset AWS_CA_BUNDLE # Debian's rclone 1.60 refuses to start with it set (DESIGN.md)

CGO_ENABLED=0 go build -o "$work/gpurent" ./cmd/gpurent
go build -o "$work/fakeimds" ./scripts/fakeimds
. scripts/weed.sh
start_weed "$work"
make_buckets gpurent rclone
export XDG_CONFIG_HOME="$work/cfg"
[ -f "$work/cfg/gpurent/identity.txt" ] || "$work/gpurent" keygen >/dev/null 2>&1
export RCLONE_CONFIG_WEED_TYPE=s3 RCLONE_CONFIG_WEED_PROVIDER=SeaweedFS RCLONE_CONFIG_WEED_ENDPOINT="$ep" \
  RCLONE_CONFIG_WEED_ACCESS_KEY_ID=bench RCLONE_CONFIG_WEED_SECRET_ACCESS_KEY=bench RCLONE_CONFIG_WEED_REGION=us-east-1

cat >"$work/trainer.sh" <<'SH'
# Waits for SIGUSR1, then writes checkpoint-1/ from $SRC: weights first,
# trainer_state.json last, as the Hugging Face Trainer does.
echo $$ >"$PIDFILE"
save() {
  d="$GPURENT_CKPT_DIR/checkpoint-1"
  mkdir -p "$d"
  date +%s.%N >"$WORK/write-start"
  cp "$SRC" "$d/model.safetensors"
  echo '{"global_step": 1}' >"$d/trainer_state.json"
  date +%s.%N >"$WORK/write-end"
}
trap save USR1
trap 'exit 0' TERM
while :; do sleep 0.05; done
SH

now() { date +%s.%N; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
results="$work/results.md"
echo "| size | round | notice served -> committed, s | trigger -> committed, s | write, s | write + rclone copy, s | ratio |" >"$results"
echo "|---|---|---|---|---|---|---|" >>"$results"
for size in 100 1024; do
  src="$work/src-$size.bin"
  [ -f "$src" ] || head -c $((size << 20)) /dev/urandom >"$src"
  for r in $(seq 1 "$rounds"); do
    run="r$size-$r-$RANDOM"
    rm -rf "$work/ck" "$work/trigger" "$work/served" "$work/port" "$work/pid" "$work/write-"*
    "$work/fakeimds" -trigger "$work/trigger" -served "$work/served" -port-file "$work/port" &
    imds=$!
    for _ in $(seq 1 50); do [ -s "$work/port" ] && break; sleep 0.1; done
    sync
    SRC="$src" PIDFILE="$work/pid" WORK="$work" "$work/gpurent" run --ckpt-dir "$work/ck" --no-status \
      --store "s3://gpurent/p?endpoint=$ep&region=us-east-1&use_path_style=true" --run "$run" \
      --preemption aws --metadata-aws "http://127.0.0.1:$(cat "$work/port")" -- sh "$work/trainer.sh" >"$work/run.log" 2>&1 &
    gp=$!
    for _ in $(seq 1 100); do [ -s "$work/pid" ] && break; sleep 0.1; done
    sleep 1
    t0=$(now)
    touch "$work/trigger"
    wait $gp || { echo "gpurent run failed:" >&2; cat "$work/run.log" >&2; exit 1; }
    t1=$(now)
    kill $imds 2>/dev/null || true
    served=$(awk '{ printf "%.9f", $1 / 1e9 }' "$work/served")
    grep -q "committed checkpoint-1" "$work/run.log" || { echo "no commit:" >&2; cat "$work/run.log" >&2; exit 1; }
    write=$(sub "$(cat "$work/write-end")" "$(cat "$work/write-start")")
    # The peer: the same write, then rclone copy of the checkpoint.
    rm -rf "$work/peer"; mkdir -p "$work/peer"; sync
    p0=$(now)
    cp "$src" "$work/peer/model.safetensors"
    echo '{"global_step": 1}' >"$work/peer/trainer_state.json"
    rclone copy -q "$work/peer" "weed:rclone/$run"
    p1=$(now)
    g=$(sub "$t1" "$served"); p=$(sub "$p1" "$p0")
    awk -v s="$size MiB" -v r="$r" -v g="$g" -v t="$(sub "$t1" "$t0")" -v w="$write" -v p="$p" \
      'BEGIN { printf "| %s | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", s, r, g, t, w, p, g / p }' | tee -a "$results"
  done
done
echo "gpurent: notice served -> gpurent exited with the checkpoint committed; trigger adds the 5 s IMDS poll interval."
echo "results: $results"
