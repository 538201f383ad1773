# SPDX-License-Identifier: GPL-2.0
# Sourced by build/deps.sh, lib/vm.sh and build/debug-kernel.sh: where
# virtme-ng is.
#
# A vng on PATH that runs is used as it is.  Otherwise scripts/build/deps.sh
# installs the version below into a virtual environment of our own under
# the cache (Debian 12's python3 refuses a system-wide pip install, PEP
# 668).  "Runs" means `vng --version` succeeds: a stale pyenv shim or a
# venv whose interpreter is gone does not count.

CAROUSEL_VENV=${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}/venv
# What vm.sh was written and tested against (--disable-kvm, --rwdir, ...).
CAROUSEL_VNG_VERSION=1.42

# vng_find: print the path of a vng that runs; fail if there is none.
vng_find() {
	local v

	for v in "$(command -v vng 2>/dev/null)" "$CAROUSEL_VENV/bin/vng"; do
		if [ -n "$v" ] && [ -x "$v" ] && "$v" --version >/dev/null 2>&1; then
			echo "$v"
			return 0
		fi
	done
	return 1
}
