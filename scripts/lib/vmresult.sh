# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# scripts/lib/vmresult.sh: sourced by every host script that boots a VM
# (check, check-install, check-debug, bench, tdc-upstream; make demo's
# VM is interactive and has no results to read).  The guest half writes
# its results into files in a shared directory (never scraped from the
# console); this library boots it and reads them back, the same way for
# all:
#
#   vmr_boot CONSOLE OUT DONE KVER CMD [ARGS...]
#       scripts/lib/vm.sh --console CONSOLE KVER -- CMD ARGS; the guest's
#       stdout goes to ours and to OUT.  DONE is the file the guest writes
#       last (a verdict): if it is missing when the VM ends, it died.  One
#       retry rule, for every caller: a VM that died with "Oops: int3" on
#       its console (QEMU's TCG race with the kernel patching a static
#       branch while another vCPU runs it; the module has no static
#       branch), or whose oops lists the modules linked in and sch_carousel
#       is not among them (the kernel died before the module was loaded:
#       one CI run's guest took a double fault in udev's overlayfs lookup
#       74 s into a boot under -icount, before its script had started), or
#       whose boot hung before its command started (vm.sh's boot watch,
#       CAROUSEL_VM_BOOT_TIMEOUT: one CI run's 6.1 guest hung so), is
#       booted once more, on CAROUSEL_VM_RETRY_CPUS vCPUs (default: as
#       before), and the reason is printed as a "RETRY:" line; its console
#       is kept as CONSOLE.1.  Any other death fails at once: an
#       unexplained death may be the code under test.  Sets VMR_RC
#       (vm.sh's exit status), VMR_SECS (wall time, both boots) and
#       VMR_RETRIED (0 or 1).
#   vmr_why CONSOLE
#       why a VM died, in one line: the first bad kernel line on its
#       console (selftests/tools/bad-kernel-lines.re, or "Kernel panic"),
#       or the signal QEMU was killed with; nothing if none.
#   vmr_bad_lines FILE [MAX]
#       the lines of a kernel log that fail a run (the same pattern).
#   vmr_tap_count TAP
#       "pass fail skip" from a TAP file's "ok" / "not ok" lines.
#   vmr_tap_table TAP [INDENT]
#       one row per case: status, name, the test's duration (from the
#       "# NAME: exit N after Ss" lines run.sh prints), reason.

VMR_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VMR_REPO=$(cd "$VMR_LIB/../.." && pwd)
VMR_BAD_RE=$(<"$VMR_REPO/selftests/tools/bad-kernel-lines.re")

vmr_bad_lines() {
	grep -E -m "${2:-1000000}" "Kernel panic|$VMR_BAD_RE" "$1" 2>/dev/null
}

vmr_why() {
	local why

	why=$(vmr_bad_lines "$1" 1)
	[ -n "$why" ] || why=$(grep -m1 '^vm.sh: boot hung' "$1" 2>/dev/null)
	[ -n "$why" ] ||
		why=$(grep -o -m1 'terminating on signal [0-9]* from pid [0-9]*[^)]*)' "$1" 2>/dev/null)
	printf '%s' "$why" | cut -c1-200
}

# vmr_not_ours CONSOLE: why a dead VM's death cannot be the code under
# test, in a few words; nothing (status 1) if it may be.
vmr_not_ours() {
	if grep -q 'Oops: int3' "$1" 2>/dev/null; then
		echo "QEMU's \"Oops: int3\" race"
	elif grep -q '^vm.sh: boot hung' "$1" 2>/dev/null; then
		echo "a boot that hung before the guest started our command"
	elif grep -q 'Modules linked in:' "$1" 2>/dev/null &&
	     ! grep 'Modules linked in:' "$1" | grep -q sch_carousel; then
		echo "a kernel death before sch_carousel was loaded ($(vmr_why "$1" | cut -c1-80))"
	else
		return 1
	fi
}

vmr_boot() {
	local console=$1 out=$2 done=$3 kver=$4 t0 cpus rc why

	shift 4
	t0=$(date +%s.%N)
	VMR_RETRIED=0
	cpus=${CAROUSEL_VM_CPUS:-}
	: >"$out"
	while :; do
		rm -f "$done"
		# (the status through a file: the caller may run under errexit
		# and pipefail, and vm.sh's status is ours to report, not to die of)
		{
			rc=0
			CAROUSEL_VM_CPUS=$cpus bash "$VMR_LIB/vm.sh" --console "$console" "$kver" -- "$@" ||
				rc=$?
			echo "$rc" >"$out.rc"
		} | tee -a "$out"
		VMR_RC=$(cat "$out.rc" 2>/dev/null || echo 255)
		rm -f "$out.rc"
		if [ ! -e "$done" ] && [ "$VMR_RETRIED" = 0 ] &&
		   why=$(vmr_not_ours "$console"); then
			mv "$console" "$console.1"
			cpus=${CAROUSEL_VM_RETRY_CPUS:-$cpus}
			echo "RETRY: the VM died (exit $VMR_RC) with $why (console: $console.1): once more${cpus:+ on $cpus vCPU}" |
				tee -a "$out" >&2
			VMR_RETRIED=1
			continue
		fi
		break
	done
	VMR_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}

vmr_tap_count() {
	awk '/^ok [0-9]+ .*# SKIP/ { s++; next }
	     /^ok [0-9]+/ { p++; next }
	     /^not ok [0-9]+/ { f++ }
	     END { printf "%d %d %d\n", p, f, s }' "$1"
}

vmr_tap_table() {
	awk -v ind="${2:-}" '
	/^# [^ ]+: exit [0-9]+ after [0-9.]+s$/ { t[$2] = $NF; next }
	/^(not )?ok [0-9]+ / {
		st = ($1 == "not") ? "not ok" : "ok"
		line = $0
		sub(/^(not )?ok [0-9]+ (- )?/, "", line)
		name = line; why = ""
		if (index(line, " # ")) {
			name = substr(line, 1, index(line, " # ") - 1)
			why = substr(line, index(line, " # ") + 3)
		}
		if (st == "ok" && why ~ /^SKIP/) { st = "skip"; sub(/^SKIP ?/, "", why) }
		printf "%s%-7s %-34s %7s  %s\n", ind, st, name, t[name ":"], why
	}' "$1"
}
