#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The module through DKMS: `make dkms-install` and `make dkms-uninstall`.
#
#   scripts/build/dkms.sh install     copy dkms.conf, VERSION, Kbuild and the module
#                               sources to /usr/src/sch_carousel-<VERSION>/,
#                               dkms add, then dkms build and dkms install for
#                               every kernel in /lib/modules that has headers
#   scripts/build/dkms.sh uninstall   dkms remove every version of sch_carousel from
#                               every kernel, and delete its sources and tree
#
# install starts afresh: a version already added is removed first.  Both need
# root; uninstall also works (and does nothing) without dkms.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

PKG=sch_carousel
# Paths relative to the repository, kept as they are under the copy: the
# module includes include/uapi/carousel.h by that relative path.
SRC_FILES=(dkms.conf VERSION Kbuild sch_carousel.c sch_carousel.h carousel_compat.h
	   carousel_wheel.h include/uapi/carousel.h)
DKMS_TREE=/var/lib/dkms

die() { echo "dkms.sh: $*" >&2; exit 1; }
say() { echo "dkms.sh: $*"; }

[ "$(id -u)" = 0 ] || die "run as root (sudo make dkms-install)"

# versions: the versions of $PKG that dkms knows, one a line.
versions() {
	local d
	for d in "$DKMS_TREE/$PKG"/*/; do
		# skip the kernel-<release>-<arch> links and original_module/
		[ -d "$d" ] && [ ! -L "${d%/}" ] && [ "$(basename "$d")" != original_module ] &&
			basename "$d"
	done
	return 0
}

do_install() {
	local ver src k d n=0

	command -v dkms >/dev/null || die "dkms is not installed (apt-get install dkms)"
	ver=$(cat "$REPO/VERSION")
	src=/usr/src/$PKG-$ver
	if versions | grep -qxF "$ver"; then
		say "$PKG/$ver is already added: removing it first"
		dkms remove -m "$PKG" -v "$ver" --all
	fi
	rm -rf "$src"
	install -d "$src"
	for f in "${SRC_FILES[@]}"; do
		install -D -m 0644 "$REPO/$f" "$src/$f"
	done
	dkms add -m "$PKG" -v "$ver"

	for d in /lib/modules/*/; do
		k=$(basename "$d")
		if [ ! -e "$d/build/Makefile" ]; then
			say "$k: no headers in $d/build, skipped"
			continue
		fi
		dkms build -m "$PKG" -v "$ver" -k "$k"
		dkms install -m "$PKG" -v "$ver" -k "$k"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || die "no kernel in /lib/modules has headers (install linux-headers-...)"
	dkms status -m "$PKG"
}

do_uninstall() {
	local v m k

	if command -v dkms >/dev/null; then
		for v in $(versions); do
			dkms remove -m "$PKG" -v "$v" --all
		done
	fi
	rm -rf "${DKMS_TREE:?}/$PKG" /usr/src/"$PKG"-*
	# What a dkms that was itself removed in the meantime left behind.
	for m in /lib/modules/*/updates/dkms/"$PKG".ko*; do
		[ -e "$m" ] || continue
		k=${m#/lib/modules/}
		k=${k%%/*}
		rm -f "$m"
		rmdir --ignore-fail-on-non-empty "/lib/modules/$k/updates/dkms" "/lib/modules/$k/updates"
		depmod -a "$k"
	done
}

case ${1:-} in
install) do_install ;;
uninstall) do_uninstall ;;
*) sed -n '/^#   scripts/,/^#$/p' "${BASH_SOURCE[0]}" | sed 's/^#  //' >&2; exit 2 ;;
esac
