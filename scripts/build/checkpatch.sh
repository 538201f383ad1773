#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/build/checkpatch.sh: print the path of the kernel's checkpatch.pl,
# unpacked once into the cache from Debian's linux-source-6.1 package
# (downloaded with apt-get download, never installed): checkpatch.pl and
# the two data files it reads beside it, spelling.txt and
# const_structs.checkpatch.  No kernel tree is needed (--no-tree).
#
# Environment:
#   CAROUSEL_CACHE   cache root (default ~/.cache/sch_carousel)
set -euo pipefail

CACHE=${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}
DIR=$CACHE/checkpatch
PKG=linux-source-6.1
CP=$DIR/checkpatch.pl

if [ -x "$CP" ] && [ -s "$DIR/spelling.txt" ] && [ -s "$DIR/const_structs.checkpatch" ]; then
	echo "$CP"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
# (a stale package list names a version the mirror no longer has: the
# security suite replaces linux-source-6.1's; update once and retry)
(cd "$tmp" && apt-get download -q "$PKG" >&2) ||
	{ $SUDO apt-get update -q >&2 && (cd "$tmp" && apt-get download -q "$PKG" >&2); } ||
	{ echo "checkpatch: apt-get download $PKG failed" >&2; exit 1; }
deb=$(ls "$tmp"/"$PKG"_*.deb)
# The package holds one tarball of the tree; take three files out of it
# as it streams, without unpacking the rest.
dpkg-deb --fsys-tarfile "$deb" |
	tar -xO --wildcards './usr/src/linux-source-*.tar.xz' |
	tar -xJ -C "$tmp" --wildcards --strip-components=2 \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'
mkdir -p "$DIR"
for f in checkpatch.pl spelling.txt const_structs.checkpatch; do
	[ -s "$tmp/$f" ] || { echo "checkpatch: $f not in $deb" >&2; exit 1; }
	cp "$tmp/$f" "$DIR/"
done
chmod +x "$CP"
basename "$deb" >"$DIR/from"
echo "$CP"
