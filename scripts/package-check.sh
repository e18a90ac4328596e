#!/usr/bin/env bash
# package-check.sh: install the .deb that scripts/release.sh built into a
# fresh Debian 12 (bookworm) root made with debootstrap, as a user's
# machine would have it, and check what the package promises: gpurent on
# PATH with its version, `man gpurent-quote`, and bash completion. Needs
# root (chroot) and debootstrap (apt-get install debootstrap); the root is
# built once and cached. Not run by CI: run it after changing the package.
#
#   bash scripts/package-check.sh [DIR]     # DIR holds the .deb (dist/)
set -euo pipefail
dir=${1:-dist}
deb=$(ls "$dir"/gpurent_*_amd64.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "package-check.sh: no gpurent_*_amd64.deb in $dir (bash scripts/release.sh builds it)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "package-check.sh: needs root, for chroot" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "package-check.sh: no debootstrap here (apt-get install debootstrap)" >&2; exit 1; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gpurent/bookworm-root-1.tar"
work=$(mktemp -d)
trap 'umount "$work/root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
if [ ! -f "$cache" ]; then
  echo "package-check.sh: building a Debian 12 root once (man-db and bash-completion included)" >&2
  debootstrap --variant=minbase --include=man-db,bash-completion bookworm "$work/root" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
    { tail -5 "$work/debootstrap.log" >&2; exit 1; }
  mkdir -p "$(dirname "$cache")"
  tar -C "$work/root" -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
else
  mkdir -p "$work/root" && tar -C "$work/root" -xf "$cache"
fi
cp "$deb" "$work/root/tmp/gpurent.deb"
mount -t proc proc "$work/root/proc"
run() { chroot "$work/root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb "$@"; }
run dpkg -i /tmp/gpurent.deb
echo "== gpurent --version"
run gpurent --version
echo "== man gpurent-quote"
run sh -c 'man -P cat gpurent-quote 2>/dev/null | head -12'
run sh -c 'man -w gpurent-quote' | grep -q '/usr/share/man/man1/gpurent-quote.1.gz' || { echo "package-check.sh: man finds no gpurent-quote" >&2; exit 1; }
echo "== bash completion"
run bash -c '. /usr/share/bash-completion/bash_completion && . /usr/share/bash-completion/completions/gpurent && complete -p gpurent'
run dpkg -r gpurent >/dev/null
run sh -c '! command -v gpurent' && echo "package-check.sh: installed, checked and removed cleanly"
