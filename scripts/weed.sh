# weed.sh: sourced by the benchmark scripts. start_weed DIR starts the
# SeaweedFS built by scripts/test.sh on loopback, with its data in DIR, and
# sets ep (the S3 endpoint) and the AWS_* variables its S3 API accepts; it
# is stopped when the calling script exits. make_buckets NAME... creates
# buckets.

# A free port whose port+10000 is free too: SeaweedFS puts gRPC there.
weed_port() { python3 -c '
import random, socket
while True:
    p = random.randint(20000, 50000)
    try:
        a = socket.socket(); a.bind(("127.0.0.1", p)); b = socket.socket(); b.bind(("127.0.0.1", p + 10000)); a.close(); b.close(); print(p); break
    except OSError:
        pass'; }

start_weed() {
  local dir=$1 version=v0.0.0-20261109003541-7506e5f91cd6 weed s3port
  weed="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/weed-$version/weed"
  [ -x "$weed" ] || { echo "SeaweedFS not built: run bash scripts/test.sh once" >&2; exit 1; }
  s3port=$(weed_port)
  rm -rf "$dir/weed"; mkdir -p "$dir/weed"
  # Without AWS_* credentials in its environment: given them, SeaweedFS
  # sets up an identity and refuses the unsigned requests used here.
  env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY setsid "$weed" server -dir="$dir/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -volume.max=2000 -master.volumeSizeLimitMB=256 \
    -master.port="$(weed_port)" -volume.port="$(weed_port)" -filer -filer.port="$(weed_port)" -s3 -s3.port="$s3port" >"$dir/weed.log" 2>&1 &
  weedpid=$!
  trap 'kill -9 -- -$weedpid 2>/dev/null || true; kill -9 $weedpid 2>/dev/null || true' EXIT
  ep="http://127.0.0.1:$s3port"
  # --max-time: during start-up SeaweedFS can accept a request and never
  # answer it; a curl without a limit then waits forever.
  for _ in $(seq 1 240); do curl -fs --max-time 2 "$ep" >/dev/null 2>&1 && break; sleep 0.5; done
  curl -fs --max-time 5 "$ep" >/dev/null || { echo "SeaweedFS did not start: $(tail -5 "$dir/weed.log")" >&2; exit 1; }
  export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
}

make_buckets() {
  local b
  for b in "$@"; do curl -fs --max-time 30 -X PUT "$ep/$b" >/dev/null || { echo "cannot create bucket $b" >&2; exit 1; }; done
}

# stop_weed stops the server start_weed started and removes its data.
stop_weed() {
  kill -9 -- -"$weedpid" 2>/dev/null || true
  kill -9 "$weedpid" 2>/dev/null || true
  wait "$weedpid" 2>/dev/null || true
  rm -rf "$1/weed"
}
