#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a Debian kernel in a throwaway VM (virtme-ng, TCG) and run one command
# in it, as root, from the repo directory.  The command's exit code is ours.
#
#   scripts/lib/vm.sh [--console FILE] KVER [--] CMD [ARGS...]
#   scripts/lib/vm.sh --resolve KVER        print the full release of KVER
#   scripts/lib/vm.sh --results-base        print where results go by default
#
# KVER is a full release (6.1.0-56-amd64), a prefix (6.1, 6.12: the newest
# installed /boot/vmlinuz-<prefix>.* wins) or a path to a vmlinuz-<release>.
# With CAROUSEL_VM_KERNEL set, KVER is not looked up: it only names the files
# (the console log, and what the guest's `uname -r` will print).
#
# Inside the guest:
#   - the host's filesystem is read-only (tmpfs overlays on /tmp /etc /var ...);
#   - $CAROUSEL_RESULTS is a directory shared read-write with the host (the
#     same path on both sides), for results the host must not scrape from the
#     console;
#   - CAROUSEL_KVER is the booted release, CAROUSEL_REPO the repo, and every
#     CAROUSEL_* variable of the caller is passed through;
#   - the command's stderr is merged into its stdout;
#   - selftests/tools/tstamp_hold.py holds the receive-timestamp static key
#     on from before the command starts to the end of the VM.
#
# The kernel boots with panic_on_warn=1 oops=panic panic=-1, and QEMU runs
# with -no-reboot: any WARN, oops or BUG ends the VM at once, and we return
# non-zero (vng's 255).  The kernel console (loglevel 5: warnings and worse)
# goes to --console FILE (default $CAROUSEL_RESULTS/<release>.console.log);
# when the VM dies (panic, timeout, exit >= 124) its tail goes to stderr.
#
# Environment (all optional):
#   CAROUSEL_RESULTS      host dir to share (default: a fresh build/results/vm.XXXXXX)
#   CAROUSEL_VM_CPUS      guest CPUs (2)
#   CAROUSEL_VM_MEM       guest memory (2G)
#   CAROUSEL_VM_TIMEOUT   seconds before the whole VM is killed (1800; 0 = none)
#   CAROUSEL_VM_BOOT_TIMEOUT  seconds the guest may take to start CMD before
#                         the VM is killed as hung at boot (600; 0 = none)
#   CAROUSEL_VM_APPEND    extra kernel command line
#   CAROUSEL_VM_QEMU_OPTS extra QEMU options, one string (e.g. the TCG plugin
#                         and -icount of scripts/bench/insnbench.sh)
#   CAROUSEL_VM_KERNEL    boot this kernel image (a bzImage from a kernel tree,
#                         e.g. the debug kernel of scripts/check/check-debug.sh)
#                         instead of /boot/vmlinuz-KVER
#   CAROUSEL_VNG          the vng binary (default: one that runs, on PATH or in
#                         the venv scripts/build/deps.sh makes; see vng.sh)
#
# Exit: the command's exit code; 255 when the guest kernel panicked (WARN,
# oops, BUG) or vng itself failed; 124 on CAROUSEL_VM_TIMEOUT or a boot that
# hung (CAROUSEL_VM_BOOT_TIMEOUT); 2 on usage.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

die() { echo "vm.sh: $*" >&2; exit 2; }

usage() {
	sed -n '/^#   scripts/p' "${BASH_SOURCE[0]}" | sed 's/^#  //' >&2
	exit 2
}

# resolve_kver KVER: print the full release of an installed kernel.
resolve_kver() {
	local want=$1 cands
	case $want in
	*/vmlinuz-*) want=${want##*/vmlinuz-} ;;
	esac
	if [ -e "/boot/vmlinuz-$want" ]; then
		echo "$want"
		return 0
	fi
	# A prefix: "6.1" matches 6.1.0-56-amd64 but not 6.12.x.
	cands=$(cd /boot && ls -d vmlinuz-"$want".* vmlinuz-"$want"-* 2>/dev/null |
		sed 's/^vmlinuz-//' | sort -V | tail -n1) || true
	[ -n "$cands" ] || { echo "vm.sh: no kernel /boot/vmlinuz-$want[.*]" >&2; return 1; }
	echo "$cands"
}

# overlaid PATH: true if the guest lays tmpfs over PATH (a share there
# would be hidden).  The host's files below stay readable in the guest.
overlaid() {
	case $1/ in
	/tmp/*|/etc/*|/var/*|/usr/*|/lib/*|/home/*|/opt/*|/srv/*|/run/*) return 0 ;;
	esac
	return 1
}

# results_base: the repo's build/results, or, for a checkout the guest
# overlays (a clone under /tmp or /home), a directory in the cache.
results_base() {
	local b=$REPO/build/results
	mkdir -p "$b" && b=$(cd "$b" && pwd -P)
	if overlaid "$b"; then
		b=${CAROUSEL_CACHE:-$HOME/.cache/sch_carousel}/results
		mkdir -p "$b" && b=$(cd "$b" && pwd -P)
	fi
	! overlaid "$b" || die "no results directory the guest can share: set CAROUSEL_RESULTS"
	echo "$b"
}

console=
while [ $# -gt 0 ]; do
	case $1 in
	--results-base)
		results_base
		exit
		;;
	--resolve)
		[ $# -eq 2 ] || usage
		resolve_kver "$2"
		exit
		;;
	--console)
		[ $# -ge 2 ] || usage
		console=$2
		shift 2
		;;
	--console=*)
		console=${1#--console=}
		shift
		;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || usage
if [ -n "${CAROUSEL_VM_KERNEL:-}" ]; then
	KVER=$1
	KIMG=$CAROUSEL_VM_KERNEL
	case $KVER in
	''|*/*) die "with CAROUSEL_VM_KERNEL, KVER is a release name, not '$KVER'" ;;
	esac
else
	KVER=$(resolve_kver "$1") || exit 2
	KIMG=/boot/vmlinuz-$KVER
fi
shift
[ "${1:-}" != "--" ] || shift
[ $# -ge 1 ] || usage

[ -r "$KIMG" ] || die "$KIMG is not readable (chmod a+r, see scripts/build/deps.sh)"
# vng: CAROUSEL_VNG, else one that runs on PATH or where scripts/build/deps.sh
# puts it.  Its helpers (virtme-run, virtme-configkernel) are looked up on
# PATH, so its directory goes first.
. "$REPO/scripts/lib/vng.sh"
if [ -n "${CAROUSEL_VNG:-}" ]; then
	VNG=$(command -v "$CAROUSEL_VNG") || die "CAROUSEL_VNG=$CAROUSEL_VNG not found"
else
	VNG=$(vng_find) || die "vng not found (bash scripts/build/deps.sh)"
fi
PATH=${VNG%/*}:$PATH

if [ -z "${CAROUSEL_RESULTS:-}" ]; then
	base=$(results_base) || exit 2
	CAROUSEL_RESULTS=$(mktemp -d "$base/vm.XXXXXX")
	echo "vm.sh: results in $CAROUSEL_RESULTS" >&2
fi
mkdir -p "$CAROUSEL_RESULTS"
CAROUSEL_RESULTS=$(cd "$CAROUSEL_RESULTS" && pwd -P)
! overlaid "$CAROUSEL_RESULTS" ||
	die "CAROUSEL_RESULTS=$CAROUSEL_RESULTS is under a directory the guest overlays"
export CAROUSEL_RESULTS
[ -n "$console" ] || console=$CAROUSEL_RESULTS/$KVER.console.log

# The guest command goes into a bash script in the shared results dir, so any
# CMD and any CAROUSEL_* value survives intact (vng --exec would pass it through
# the kernel command line and whatever shell the guest init picks).
gscript=$CAROUSEL_RESULTS/.vm-cmd.$KVER.$$.sh
booted=$CAROUSEL_RESULTS/.vm-booted.$KVER.$$
rm -f "$booted"
{
	echo "# generated by scripts/lib/vm.sh"
	printf 'export CAROUSEL_KVER=%q CAROUSEL_REPO=%q CAROUSEL_RESULTS=%q\n' \
		"$KVER" "$REPO" "$CAROUSEL_RESULTS"
	while IFS= read -r var; do
		case $var in
		CAROUSEL_KVER|CAROUSEL_REPO|CAROUSEL_RESULTS|CAROUSEL_VM_*|CAROUSEL_VNG) continue ;;
		esac
		printf 'export %s=%q\n' "$var" "${!var}"
	done < <(compgen -e | grep '^CAROUSEL_' || true)
	# (the host's boot watch, below: the guest has come up)
	printf ': >%q\n' "$booted"
	printf 'cd %q || exit 125\n' "$REPO"
	echo 'exec 2>&1'
	# The receive-timestamp key, held on for the whole VM before any
	# test runs (selftests/tools/tstamp_hold.py says why).  A cold
	# python3 in a TCG guest has been seen to take more than 5 s to
	# start, so wait for its word up to a minute; without it the tests
	# still run, and the note says so.
	printf 'python3 %q >/tmp/tstamp_hold.out 2>&1 &\n' "$REPO/selftests/tools/tstamp_hold.py"
	cat <<'GUEST'
hold_pid=$! hold_t0=$SECONDS
until grep -qx holding /tmp/tstamp_hold.out 2>/dev/null; do
	kill -0 "$hold_pid" 2>/dev/null && [ $((SECONDS - hold_t0)) -lt 60 ] || break
	sleep 0.2
done
grep -qx holding /tmp/tstamp_hold.out 2>/dev/null ||
	echo "vm.sh: note: tstamp_hold.py did not start ($( kill -0 "$hold_pid" 2>/dev/null && echo "60 s" || echo exited)): $(head -c 200 /tmp/tstamp_hold.out)"
GUEST
	printf 'exec'
	printf ' %q' "$@"
	echo
} >"$gscript"
trap 'rm -f "$gscript" "$booted"' EXIT
gcmd="bash $gscript"
case $gscript in
*[!A-Za-z0-9_./+=-]*) die "results path $CAROUSEL_RESULTS: keep it to [A-Za-z0-9_./+=-]" ;;
esac

append="panic_on_warn=1 oops=panic panic=-1 loglevel=5"
append+=" ${CAROUSEL_VM_APPEND:-}"

vng_args=(
	--verbose			# kernel console to stderr, captured below
	--disable-kvm			# /dev/kvm has no backend here: TCG
	--run "$KIMG"
	--cpus "${CAROUSEL_VM_CPUS:-2}"
	--memory "${CAROUSEL_VM_MEM:-2G}"
	--cwd "$REPO"
	--rwdir "$CAROUSEL_RESULTS"
	--append "$append"
	--exec "$gcmd"
)
[ -z "${CAROUSEL_VM_QEMU_OPTS:-}" ] || vng_args+=(--qemu-opts="$CAROUSEL_VM_QEMU_OPTS")

timeout_s=${CAROUSEL_VM_TIMEOUT:-1800}
boot_s=${CAROUSEL_VM_BOOT_TIMEOUT:-600}
# (timeout 0 runs the command with no limit; it still forwards a TERM from
# the boot watch to vng and QEMU, in its own process group)
tmo=(timeout -k 10 "$timeout_s")

mkdir -p "$(dirname "$console")"
t0=$(date +%s.%N)
# No stdin: CI has none, and vng's stdin chardev must not steal a terminal.
# stderr (the kernel console with --verbose) goes to the console file.
# stdout goes through a pipe: QEMU reopens /proc/self/fd/1, which for a
# regular file means its own offset (and O_TRUNC), clobbering the file.
#
# The boot watch: a guest that has not started our command within
# CAROUSEL_VM_BOOT_TIMEOUT seconds is killed, and the console says so in
# a line scripts/lib/vmresult.sh knows (a boot that hangs under TCG runs
# nothing of ours: one CI run's 6.1 guest sat silent for the whole hour
# of its VM limit).
set +e
"${tmo[@]}" "$VNG" "${vng_args[@]}" </dev/null 2>"$console" > >(cat) &
vpid=$!
wpid=
if [ "$boot_s" != 0 ]; then
	(
		end=$((SECONDS + boot_s))
		while [ ! -e "$booted" ] && kill -0 "$vpid" 2>/dev/null; do
			if [ "$SECONDS" -ge "$end" ]; then
				echo "vm.sh: boot hung: the guest had not started its command after ${boot_s}s (CAROUSEL_VM_BOOT_TIMEOUT)" >>"$console"
				kill -TERM "$vpid" 2>/dev/null
				exit 0
			fi
			sleep 2
		done
	) &
	wpid=$!
fi
wait "$vpid"
rc=$?
[ -z "$wpid" ] || { kill "$wpid" 2>/dev/null; wait "$wpid" 2>/dev/null; }
# (the guest's last output, through cat, before our own lines)
wait
grep -q '^vm.sh: boot hung' "$console" 2>/dev/null && rc=124
set -e
t1=$(date +%s.%N)
wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

if [ "$rc" = 0 ]; then
	echo "vm.sh: $KVER: exit 0 after ${wall}s" >&2
elif grep -q 'Kernel panic' "$console" 2>/dev/null || [ "$rc" -ge 124 ]; then
	# The VM died (panic on WARN/oops/BUG, timeout, vng failure): show why.
	why="exit $rc"
	if grep -q 'Kernel panic' "$console" 2>/dev/null; then
		why="kernel panic"
	elif grep -q '^vm.sh: boot hung' "$console" 2>/dev/null; then
		why="boot hung (CAROUSEL_VM_BOOT_TIMEOUT=${boot_s}s)"
	elif [ "$rc" = 124 ]; then
		why="timed out (CAROUSEL_VM_TIMEOUT=${timeout_s}s)"
	fi
	{
		echo "vm.sh: $KVER: $why after ${wall}s; console tail ($console):"
		grep -v '^\s*$' "$console" | tail -n 60 | sed 's/^/vm.sh|  /'
	} >&2
else
	echo "vm.sh: $KVER: exit $rc after ${wall}s (console: $console)" >&2
fi
exit "$rc"
