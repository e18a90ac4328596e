#!/usr/bin/env bash
# install-check.sh: follow the README's Install section as a newcomer
# would, with nothing cached: a fresh clone of this commit, an empty HOME,
# module and build caches. Then play the rented box: the release binary
# checked against SHA256SUMS and run with no Go and no HOME, and the -nogpu
# build run in an empty root (an image without glibc's loader). It takes
# about 15 minutes on 2 cores; it needs root for chroot. Not run by CI,
# which checks the reproducible build; run it after changing the README's
# Install section or scripts/release.sh.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/box" "$work/emptyroot"
export HOME=$work/home GOPATH=$work/home/go GOCACHE=$work/home/.cache/go-build GOFLAGS=
export PATH=/usr/local/go/bin:/usr/sbin:/usr/bin:/sbin:/bin
git clone -q "$repo" "$work/gpurent"
cd "$work/gpurent"
echo "== go install -v ./cmd/gpurent"
s=$(date +%s)
go install -v ./cmd/gpurent 2>"$work/build.log"
echo "$(($(date +%s) - s)) s, $(grep -c 'go: downloading' "$work/build.log") 'go: downloading' lines, $(grep -vc 'go: downloading' "$work/build.log") packages named"
export PATH="$PATH:$(go env GOPATH)/bin"
gpurent --version
echo "== bash scripts/release.sh"
s=$(date +%s)
bash scripts/release.sh >/dev/null
echo "$(($(date +%s) - s)) s"
echo "== the rented box: install.sh checks it against SHA256SUMS; run with no Go"
cp dist/gpurent-linux-amd64 dist/SHA256SUMS dist/install.sh "$work/box/"
(cd "$work/box" && env -i PATH=/usr/bin:/bin HOME="$work/box" sh -c 'sh install.sh &&
  "$HOME/.local/bin/gpurent" quote --gpu "RTX 4090" --hours 300 --days 30 --starts 10 --disk 200 --egress 100 --top 1 >/dev/null && echo "quote: ok"')
echo "== an image without glibc's loader: an empty root with the -nogpu build"
cp dist/gpurent-linux-amd64-nogpu "$work/emptyroot/gpurent"
chroot "$work/emptyroot" /gpurent quote --gpu H100 --hours 10 --top 1 >/dev/null && echo "quote: ok"
chroot "$work/emptyroot" /gpurent bench --no-history --duration 1s --disk-mb 0 >/dev/null && echo "bench: ok"
echo "install-check: the README's Install section works"
