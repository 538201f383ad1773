#!/bin/bash
# Install everything the build, the tests and the demo need, on a fresh
# Debian 12 machine.  Idempotent: a second run only checks.
set -euo pipefail

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

# --- Debian 12 packages -------------------------------------------------
# libclang-rt-dev: clang's libFuzzer and sanitizer runtimes (selftests/fuzz);
# Debian's clang package does not pull them in.  valgrind (callgrind counts
# the wheel benchmark's instructions; it also ships <valgrind/callgrind.h>),
# python3-matplotlib (the plots) and util-linux (taskset): make bench.
# python3-venv: the virtual environment virtme-ng goes into (below).
PKGS="build-essential bc flex bison libelf-dev kmod qemu-system-x86
      linux-image-amd64 linux-headers-amd64 iproute2 iperf3 jq
      python3 python3-pip busybox-static sparse socat
      clang llvm libclang-rt-dev libbpf-dev bpftool ethtool procps groff-base man-db
      valgrind python3-matplotlib util-linux python3-venv libglib2.0-dev"

# --- bookworm-backports: the 6.12 kernel --------------------------------
BP_LIST=/etc/apt/sources.list.d/carousel-backports.sources
if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
	mirror=$(grep -rhs '^URIs:.*debian$\|^URIs:.*debian/$' /etc/apt/sources.list.d/ | head -n1 | awk '{print $2}')
	[ -n "$mirror" ] || mirror=$(grep -hs '^deb .*debian ' /etc/apt/sources.list | head -n1 | awk '{print $2}')
	[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
	echo "deps: adding bookworm-backports from $mirror"
	printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$mirror" | $SUDO tee "$BP_LIST" >/dev/null
	NEED_UPDATE=1
fi

missing=
for p in $PKGS; do have_pkg "$p" || missing="$missing $p"; done
bp_kernel_missing=1
ls /boot/vmlinuz-6.12.* >/dev/null 2>&1 && ls -d /usr/src/linux-headers-6.12.*-amd64 >/dev/null 2>&1 && bp_kernel_missing=0

if [ -n "$missing" ] || [ "$bp_kernel_missing" = 1 ] || [ -n "${NEED_UPDATE:-}" ]; then
	$SUDO apt-get update -q
fi
if [ -n "$missing" ]; then
	echo "deps: installing$missing"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing
fi
if [ "$bp_kernel_missing" = 1 ]; then
	echo "deps: installing the 6.12 kernel from bookworm-backports"
	echo "deps: NOTE: backports' linux-image-amd64 makes 6.12 the kernel this host boots next (with GRUB's default), and later apt upgrades follow backports' kernels"
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		-t bookworm-backports linux-image-amd64 linux-headers-amd64
fi

# --- Go, for carousel-cni (tc/cni) --------------------------------------
# Any go of 1.23 or newer that tc/cni/findgo.sh finds (PATH, /usr/local/go,
# /usr/lib/go-1.*) will do; where there is none (Debian 12's own golang-go
# is 1.19), Debian's 1.23 from bookworm-backports (go.mod asks for 1.23).
if ! sh "$(dirname "$0")/../../tc/cni/findgo.sh" >/dev/null; then
	echo "deps: installing Go 1.23 from bookworm-backports"
	$SUDO apt-get update -q
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends \
		-t bookworm-backports golang-1.23-go
fi

# --- PyPI: virtme-ng ------------------------------------------------------
# Never into the system's Python: into a venv under the cache, made with
# Debian's python3 (python3-venv above) so that it does not depend on
# whichever python comes first on PATH.  See scripts/lib/vng.sh.
. "$(dirname "$0")/../lib/vng.sh"
if ! vng_find >/dev/null; then
	echo "deps: installing virtme-ng $CAROUSEL_VNG_VERSION into $CAROUSEL_VENV"
	rm -rf "$CAROUSEL_VENV"
	py=python3
	[ ! -x /usr/bin/python3 ] || py=/usr/bin/python3
	"$py" -m venv "$CAROUSEL_VENV"
	"$CAROUSEL_VENV/bin/python3" -m pip install -q "virtme-ng==$CAROUSEL_VNG_VERSION"
	vng_find >/dev/null || { echo "deps: virtme-ng does not run from $CAROUSEL_VENV" >&2; exit 1; }
fi

# --- iproute2 6.15 from backports, unpacked into a cache (not installed):
# the plugin is tested against it too, and its tc prints class JSON.
echo "deps: iproute2 6.15 tc: $(bash "$(dirname "$0")/iproute2-bp.sh")"

# The kernel's checkpatch.pl, from linux-source-6.1 (downloaded, not
# installed): make style.
echo "deps: checkpatch: $(bash "$(dirname "$0")/checkpatch.sh")"
# The QEMU plugin of the instruction count (make bench), against the
# installed QEMU's own plugin header (Debian's source package).
echo "deps: qemu plugin: $(bash "$(dirname "$0")/qemu-plugin.sh")"

# vng reads the kernel image; Debian installs it 0600.
$SUDO chmod a+r /boot/vmlinuz-* 2>/dev/null || true
echo "deps: ok"
