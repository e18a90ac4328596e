#!/bin/sh
# install.sh: install the gpurent binary of this machine's OS and
# architecture from a directory that holds it and SHA256SUMS (what
# scripts/release.sh writes to dist/), after checking it against that
# file: a binary whose SHA-256 differs, or that SHA256SUMS does not list,
# is refused and nothing is installed. It also writes bash completion
# where the user's shell reads it. POSIX sh, for images without bash.
#
#   sh install.sh [FROM_DIR]     # default: the directory install.sh is in
#
# PREFIX (default /usr/local as root, else ~/.local) chooses where:
# $PREFIX/bin/gpurent.
set -eu
from=${1:-$(dirname "$0")}
case $from in -*) from=./$from ;; esac
case $(uname -s) in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) echo "install.sh: $(uname -s) is not a system gpurent ships for (Linux, macOS; Windows: copy the .exe)" >&2; exit 1 ;;
esac
case $(uname -m) in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) echo "install.sh: $(uname -m) is not an architecture gpurent ships for (amd64, arm64)" >&2; exit 1 ;;
esac
name=gpurent-$os-$arch
# An image without glibc's loader (Alpine, distroless) gets the static build.
if [ "$os-$arch" = linux-amd64 ] && [ -n "${GPURENT_NOGPU:-}" ]; then
  name=gpurent-linux-amd64-nogpu
fi
bin=$from/$name
sums=$from/SHA256SUMS
[ -f "$bin" ] || { echo "install.sh: no $bin (copy it from dist/ beside SHA256SUMS)" >&2; exit 1; }
[ -f "$sums" ] || { echo "install.sh: no $sums to check $name against: nothing installed" >&2; exit 1; }
want=$(awk -v n="$name" 'NF == 2 && ($2 == n || $2 == "*" n) {print $1}' "$sums")
if [ -z "$want" ]; then
  echo "install.sh: SHA256SUMS lists no $name: nothing installed" >&2
  exit 1
fi
if command -v sha256sum >/dev/null; then
  sha() { sha256sum <"$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null; then
  sha() { shasum -a 256 <"$1" | cut -d' ' -f1; }
else
  echo "install.sh: no sha256sum or shasum here to check $name with: nothing installed" >&2
  exit 1
fi
if [ -z "${PREFIX:-}" ]; then
  if [ "$(id -u)" = 0 ]; then PREFIX=/usr/local; else PREFIX=${HOME:?install.sh: neither PREFIX nor HOME is set: say where, PREFIX=DIR}/.local; fi
fi
target=$PREFIX/bin/gpurent
if [ -d "$target" ]; then
  echo "install.sh: $target is a directory: nothing installed" >&2
  exit 1
fi
mkdir -p "$PREFIX/bin"
# The copy is what is checked, run and then renamed into place: a binary
# swapped in FROM_DIR after the check is never the one installed. mktemp
# makes a new file of its own (mode 600), never one planted there.
tmp=$(mktemp "$PREFIX/bin/.gpurent.XXXXXX")
trap 'rm -f "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
cp -- "$bin" "$tmp"
got=$(sha "$tmp")
if [ "$got" != "$want" ]; then
  echo "install.sh: $name does not match SHA256SUMS (sha256 $got, listed $want): it was changed or damaged on the way; nothing installed" >&2
  exit 1
fi
chmod 755 "$tmp"
if ! version=$("$tmp" --version 2>&1); then
  echo "install.sh: $name matches SHA256SUMS but does not run here ($version): nothing installed (an image without glibc's loader needs GPURENT_NOGPU=1)" >&2
  exit 1
fi
mv -f "$tmp" "$target"
echo "install.sh: $name checked against SHA256SUMS and installed as $target"
echo "$version"
# Bash completion: system-wide as root, else in the user's data directory.
if [ "$(id -u)" = 0 ]; then
  comp=$PREFIX/share/bash-completion/completions
else
  comp=${XDG_DATA_HOME:-$HOME/.local/share}/bash-completion/completions
fi
if mkdir -p "$comp" 2>/dev/null && "$target" completion bash >"$comp/.gpurent.$$" 2>/dev/null && mv -f "$comp/.gpurent.$$" "$comp/gpurent"; then
  echo "install.sh: bash completion in $comp/gpurent (zsh, fish: gpurent completion --help)"
else
  rm -f "$comp/.gpurent.$$"
fi
case ":$PATH:" in
*":$PREFIX/bin:"*) ;;
*) echo "install.sh: $PREFIX/bin is not on PATH: add it (export PATH=\"$PREFIX/bin:\$PATH\") or call $PREFIX/bin/gpurent" ;;
esac
