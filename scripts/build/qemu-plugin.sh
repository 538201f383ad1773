#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/build/qemu-plugin.sh: print the path of insncount.so, the QEMU TCG
# plugin of the instruction count (scripts/bench/insncount.c), built once
# per installed QEMU into the cache.  The plugin API header must be the
# installed QEMU's own: it comes from Debian's source package of exactly
# that version (downloaded with a deb-src list of our own, in the cache;
# the system's apt configuration is not touched), of which only
# include/qemu/qemu-plugin.h is unpacked.  Debian's QEMU is built with
# plugin support but ships no plugin.
#
# Needs libglib2.0-dev (make deps installs it).
#
# Environment:
#   CAROUSEL_CACHE   cache root (default ~/.cache/sch_carousel)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CACHE=${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}
SRC=$REPO/scripts/bench/insncount.c

die() { echo "qemu-plugin: $*" >&2; exit 1; }

ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null) ||
	die "qemu-system-x86 is not installed (make deps)"
DIR=$CACHE/qemu-plugin/${ver//:/_}
SO=$DIR/insncount.so
HDR=$DIR/include/qemu-plugin.h

if [ ! -s "$HDR" ]; then
	apt=$DIR/apt
	mkdir -p "$apt/lists/partial"
	# The suites of the installed system (a security update of QEMU lives
	# in bookworm-security), as deb-src.
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	{
		echo "deb-src http://deb.debian.org/debian $codename main"
		echo "deb-src http://deb.debian.org/debian $codename-updates main"
		echo "deb-src http://deb.debian.org/debian-security $codename-security main"
	} >"$apt/sources.list"
	opts=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
	      -o "Dir::State::Lists=$apt/lists" -o Debug::NoLocking=1)
	apt-get "${opts[@]}" -q update >&2 || die "apt-get update of the deb-src list failed"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get "${opts[@]}" -q source --download-only "qemu=$ver" >&2) ||
		die "apt-get source qemu=$ver failed"
	orig=$(ls "$tmp"/qemu_*.orig.tar.*) || die "no orig tarball for qemu $ver"
	# Debian's patches must leave the header alone, or it is not the API
	# the binary was built with.
	if tar -xOf "$tmp"/qemu_*.debian.tar.* --wildcards 'debian/patches/*' 2>/dev/null |
		grep -q '^+++ .*include/qemu/qemu-plugin.h'; then
		die "Debian's patches change qemu-plugin.h: not supported"
	fi
	mkdir -p "$DIR/include"
	tar -xOf "$orig" --wildcards '*/include/qemu/qemu-plugin.h' >"$HDR.tmp" ||
		die "qemu-plugin.h not in $orig"
	mv "$HDR.tmp" "$HDR"
fi

if [ ! -s "$SO" ] || [ "$SRC" -nt "$SO" ]; then
	pkg-config --exists glib-2.0 || die "glib-2.0 headers missing (apt-get install libglib2.0-dev)"
	# shellcheck disable=SC2046
	gcc -O2 -g -Wall -Wextra -Wno-unused-parameter -Werror -shared -fPIC \
		-I"$DIR/include" $(pkg-config --cflags glib-2.0) -o "$SO.tmp" "$SRC" ||
		die "building insncount.so failed"
	mv "$SO.tmp" "$SO"
fi
echo "$SO"
