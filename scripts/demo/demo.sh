#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make demo: boot a VM (6.12 by default; CAROUSEL_DEMO_KERNEL=6.1 for the
# other), load the module, shape real traffic through three classes and
# show what a user wants to see: achieved vs configured rates, and tc -s.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
kver=$(bash scripts/lib/vm.sh --resolve "${CAROUSEL_DEMO_KERNEL:-6.12}")
echo "building sch_carousel.ko for $kver ..."
ko=$(bash scripts/build/module.sh "$kver")
echo "booting $kver in a VM (TCG, ~20 s) ..."
exec bash scripts/lib/vm.sh "$kver" -- bash -c \
	"insmod '$ko' && TC_LIB_DIR='$REPO/tc' bash scripts/demo/demo-guest.sh"
