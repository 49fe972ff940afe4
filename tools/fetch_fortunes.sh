#!/bin/sh
# tools/fetch_fortunes.sh [DIR]: puts the text of Debian's `fortunes` package
# (the fortune-mod cookie files: about 2.5 MB of quotations, jokes and
# poems, each fortune ended by a line holding only `%`) at DIR/fortunes.txt
# (default data/), for examples/char_lm.lua. The .deb is downloaded with
# apt-get into a temporary directory and the files under
# usr/share/games/fortunes/ are concatenated in name order, without the
# strfile indices (*.dat) and the *.u8 links (which name the same files).
# The texts are distributed under the BSD licence of fortune-mod (see the
# package's usr/share/doc/fortunes/copyright). Does nothing when the file is
# already there.
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/data}
out=$dir/fortunes.txt
[ -s "$out" ] && { echo "$out"; exit 0; }
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp" # apt's _apt user writes the download
(cd "$tmp" && apt-get download -q fortunes >/dev/null 2>&1) || {
  echo "fetch_fortunes: 'apt-get download fortunes' failed (is a Debian archive reachable? try apt-get update)" >&2
  exit 1
}
deb=$(ls "$tmp"/fortunes_*.deb)
dpkg-deb -x "$deb" "$tmp/x"
src=$tmp/x/usr/share/games/fortunes
[ -d "$src" ] || { echo "fetch_fortunes: usr/share/games/fortunes not found in $deb" >&2; exit 1; }
files=$(cd "$src" && for f in *; do
  case $f in *.dat|*.u8) ;; *) [ -f "$f" ] && [ ! -L "$f" ] && echo "$f" ;; esac
done | LC_ALL=C sort)
[ -n "$files" ] || { echo "fetch_fortunes: no fortune files in $deb" >&2; exit 1; }
(cd "$src" && cat $files) > "$tmp/fortunes.txt"
mv "$tmp/fortunes.txt" "$out"
echo "$out"
