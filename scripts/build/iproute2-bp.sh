#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Print the path of a tc from bookworm-backports' iproute2 (6.15 when this
# was written), next to Debian 12's own /usr/sbin/tc (6.1), so the plugin
# can be checked against both.  Nothing is installed system-wide: the .deb
# is fetched with "apt-get download" and unpacked with "dpkg-deb -x" into
#
#   ${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}/iproute2-bp/
#
# Idempotent: once unpacked, a later run only checks it and prints the
# path again (it fetches anew when apt's candidate version changes).
#
# If that tc needed shared libraries newer than Debian 12 has, they would
# be fetched the same way, unpacked alongside, and the printed path would
# be a wrapper script that sets LD_LIBRARY_PATH.  With 6.15.0-1~bpo12+1 it
# does not: the tc binary itself is printed.
#
# Only the path goes to stdout; apt's chatter goes to stderr.
set -euo pipefail

SUITE=bookworm-backports
PKG=iproute2
CACHE=${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}/iproute2-bp
ROOT=$CACHE/root
STAMP=$CACHE/version

log() { echo "iproute2-bp: $*" >&2; }
die() { log "$*"; exit 1; }

# The version apt would download from the suite (no network needed).
candidate() {
	apt-cache policy -t "$SUITE" "$1" 2>/dev/null |
		awk '/Candidate:/ { print $2; exit }'
}

# Download package $1 from $SUITE into $CACHE/debs/ and print the file.
download() {
	local pkg=$1 deb
	mkdir -p "$CACHE/debs"
	# Into the current directory.  As root under a private $HOME, apt
	# warns that the download is not sandboxed: harmless.
	if ! (cd "$CACHE/debs" &&
	      apt-get download -q -t "$SUITE" "$pkg") >&2; then
		log "apt-get download -t $SUITE $pkg failed"
		die "(is $SUITE in apt's sources and apt-get update run? scripts/build/deps.sh does both)"
	fi
	deb=$(ls -t "$CACHE/debs/${pkg}_"*.deb 2>/dev/null | head -n1 || true)
	[ -n "$deb" ] || die "no .deb for $pkg in $CACHE/debs"
	echo "$deb"
}

# Shared libraries $1 needs that the dynamic loader cannot find (with
# LD_LIBRARY_PATH=$2).
missing_libs() {
	LD_LIBRARY_PATH=${2:-} ldd "$1" 2>/dev/null |
		awk '/=> not found/ { print $1 }'
}

find_tc() {
	local t
	for t in "$ROOT"/{,usr/}sbin/tc "$ROOT"/{,usr/}bin/tc; do
		[ -x "$t" ] && { echo "$t"; return 0; }
	done
	return 1
}

want=$(candidate "$PKG")
[ -n "$want" ] || die "apt has no $PKG in $SUITE (apt-get update? scripts/build/deps.sh)"

have=$(cat "$STAMP" 2>/dev/null || true)
if [ "$have" != "$want" ] || ! find_tc >/dev/null; then
	log "fetching $PKG $want from $SUITE into $CACHE"
	rm -rf "$ROOT" "$CACHE/debs" "$CACHE/tc" "$CACHE/libs-fetched"
	mkdir -p "$ROOT"
	deb=$(download "$PKG")
	dpkg-deb -x "$deb" "$ROOT"
	echo "$want" >"$STAMP"
fi

tc=$(find_tc) || die "no tc in $PKG $want"
# Every directory of the unpacked tree that holds a shared library.
lib_dirs() {
	find "$ROOT" -name '*.so*' \( -type f -o -type l \) -printf '%h\n' |
		sort -u | paste -sd: -
}
libdirs=$(lib_dirs)

# Newer shared libraries, if this tc needs any: fetch the libraries among
# the package's dependencies from the same suite, unpack them alongside.
# Not libc6: the C library must match the system's dynamic loader.
missing=$(missing_libs "$tc" "$libdirs")
if [ -n "$missing" ] && [ ! -e "$CACHE/libs-fetched" ]; then
	log "$tc needs:" $missing
	pkgdeb=$(ls -t "$CACHE/debs/${PKG}_"*.deb | head -n1 || true)
	[ -n "$pkgdeb" ] || die "no $PKG .deb left in $CACHE/debs"
	deps=$(dpkg-deb -f "$pkgdeb" Depends |
		tr ',|' '\n\n' | sed 's/(.*)//; s/:any//; s/[[:space:]]//g' |
		grep '^lib' | grep -v -x -e libc6 -e '.*-bin' | sort -u || true)
	for dep in $deps; do
		deb=$(download "$dep")
		dpkg-deb -x "$deb" "$ROOT"
	done
	touch "$CACHE/libs-fetched"
	libdirs=$(lib_dirs)
	missing=$(missing_libs "$tc" "$libdirs")
fi
[ -z "$missing" ] || die "$tc still misses:" $missing

if [ -e "$CACHE/libs-fetched" ]; then
	cat >"$CACHE/tc.new" <<-EOF
	#!/bin/sh
	# tc from $PKG $want ($SUITE) with its own shared libraries.
	LD_LIBRARY_PATH="$libdirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" \\
		exec "$tc" "\$@"
	EOF
	chmod 0755 "$CACHE/tc.new"
	mv -f "$CACHE/tc.new" "$CACHE/tc"
	tc=$CACHE/tc
fi

"$tc" -V >/dev/null 2>&1 || die "$tc does not run here"
echo "$tc"
