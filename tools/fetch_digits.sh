#!/bin/sh
# tools/fetch_digits.sh [DIR]: puts the handwritten-digits data set (1797
# 8x8 images, 64 pixel values 0..16 then the label 0..9 per CSV row) at
# DIR/digits.csv.gz (default data/), taken from Debian's python3-sklearn
# package: the .deb is downloaded with apt-get into a temporary directory
# and only that one file is extracted. No Python is needed. Does nothing
# when the file is already there.
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$here/data}
out=$dir/digits.csv.gz
[ -s "$out" ] && { echo "$out"; exit 0; }
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 777 "$tmp" # apt's _apt user writes the download
(cd "$tmp" && apt-get download -q python3-sklearn >/dev/null 2>&1) || {
  echo "fetch_digits: 'apt-get download python3-sklearn' failed (is a Debian archive reachable? try apt-get update)" >&2
  exit 1
}
deb=$(ls "$tmp"/python3-sklearn_*.deb)
member=$(dpkg-deb -c "$deb" | awk '{print $NF}' | grep '/sklearn/datasets/data/digits.csv.gz$' | head -1)
[ -n "$member" ] || { echo "fetch_digits: digits.csv.gz not found in $deb" >&2; exit 1; }
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "$member"
mv "$tmp/$member" "$out"
echo "$out"
