# SPDX-License-Identifier: GPL-2.0
#
# sch_carousel: a timing-wheel shaper qdisc.
#
#   make                     module (for KDIR), the tc plugin, carousel-cgroup and
#                            carousel-cni (the CNI plugin, Go: tc/cni)
#   make KDIR=/lib/modules/<ver>/build
#   make check               unit tests, 60 s of fuzzing, then the selftests in a
#                            VM on both kernels: on 6.1 those whose result the
#                            kernel's version can change (tier compat), on 6.12
#                            tiers compat and main (selftests/tools/tier.sh)
#   make check-full          the same with every selftest on both kernels
#   make fuzz                fuzz the timing wheel for FUZZ_SECONDS (default 60)
#   make demo                a VM that shapes real traffic through a few classes
#   make deps                install what the above need (idempotent)
#   make install             module under /lib/modules/<ver>/extra (for KDIR), and
#                            the plugin, carousel-cgroup, tc-carousel(8) and
#                            carousel-cni in /opt/cni/bin (install-user)
#   make dkms-install        the module through DKMS for every kernel with headers
#                            (/lib/modules/<ver>/updates/dkms), and install-user
#   make uninstall           remove what any of the installs added, for every kernel
#   make check-install       dkms-install, modprobe in a VM on both kernels, uninstall
#   make check-man           the man page renders without a warning
#   make style               checkpatch --strict, and sparse in a W=1 build on
#                            both kernels (make check runs both)
#   make bench               benchmarks (userspace wheel + one 6.12 VM) into docs/bench/
#   make bench-smoke         the benchmarks at toy sizes: they run, their output is
#                            well formed (make check runs it; never judges a figure)
#   make bench-insn          only the instruction count per packet (a 6.12 VM of one
#                            vCPU under QEMU's -icount): docs/bench/insn.{json,md}
#   make check-debug         the selftests on a KASAN/kmemleak/lockdep kernel built
#                            once into ~/.cache/sch_carousel/debug-kernel (slow;
#                            not part of make check)

KVER ?= $(shell uname -r)
KDIR ?= $(firstword $(wildcard /lib/modules/$(KVER)/build) \
		    $(lastword $(sort $(wildcard /lib/modules/*/build))))
# Where Debian's tc looks for q_<kind>.so.
TC_LIB_DIR_INSTALL ?= $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/tc /usr/lib/tc /usr/lib64/tc) \
			/usr/lib/tc)
MAN8DIR ?= /usr/local/share/man/man8
# Where container runtimes look for CNI plugins.
CNI_BIN_DIR ?= /opt/cni/bin
# The kernel release KDIR builds for.
KREL = $(notdir $(patsubst %/build,%,$(KDIR)))

all: module tc

module:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || \
		{ echo "no kernel build dir: install linux-headers or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

tc:
	$(MAKE) -C tc
	$(MAKE) -C tc/cni

deps:
	bash scripts/build/deps.sh

unit:
	$(MAKE) -C selftests/unit run

FUZZ_SECONDS ?= 60
fuzz:
	bash selftests/fuzz/run.sh $(FUZZ_SECONDS)

# The CNI selftest runs carousel-cni beside cnitool, ptp, host-local and
# the upstream bandwidth plugin, built from the CNI projects' releases.
cni-refs:
	$(MAKE) -C tc/cni refs

check: deps tc cni-refs
	bash scripts/check/check.sh

check-full: deps tc cni-refs
	CAROUSEL_TIERS="$${CAROUSEL_TIERS-6.1:full 6.12:full}" bash scripts/check/check.sh

demo: deps tc
	bash scripts/demo/demo.sh

check-man:
	bash scripts/check/check-man.sh

style: deps
	bash scripts/check/style.sh

bench: deps tc
	bash scripts/bench/bench.sh

bench-smoke: deps tc
	bash scripts/bench/bench.sh --smoke

bench-insn: deps tc
	bash scripts/bench/insnbench.sh

check-install: deps tc
	bash scripts/check/check-install.sh

check-debug: deps tc
	bash scripts/check/check-debug.sh

install: module tc install-user
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra modules_install
	depmod -a $(KREL)

install-user: tc
	install -D -m 0644 tc/q_carousel.so $(DESTDIR)$(TC_LIB_DIR_INSTALL)/q_carousel.so
	install -D -m 0755 tc/carousel-cgroup $(DESTDIR)/usr/local/sbin/carousel-cgroup
	install -D -m 0644 docs/tc-carousel.8 $(DESTDIR)$(MAN8DIR)/tc-carousel.8
	install -D -m 0755 tc/cni/bin/carousel-cni $(DESTDIR)$(CNI_BIN_DIR)/carousel-cni

dkms-install: tc install-user
	bash scripts/build/dkms.sh install

dkms-uninstall:
	bash scripts/build/dkms.sh uninstall

# Every kernel, not only KDIR's: an install for another kernel leaves no
# module behind either.  The 6.12 modules_install compresses (.ko.xz).
uninstall: dkms-uninstall
	@set -e; for m in /lib/modules/*/extra/sch_carousel.ko*; do \
		[ -e "$$m" ] || continue; \
		k=$${m#/lib/modules/}; k=$${k%%/*}; \
		echo "rm -f $$m"; rm -f "$$m"; \
		rmdir --ignore-fail-on-non-empty /lib/modules/$$k/extra; \
		depmod -a $$k; \
	done
	rm -f $(DESTDIR)$(TC_LIB_DIR_INSTALL)/q_carousel.so
	rm -f $(DESTDIR)/usr/local/sbin/carousel-cgroup
	rm -f $(DESTDIR)$(MAN8DIR)/tc-carousel.8
	rm -f $(DESTDIR)$(CNI_BIN_DIR)/carousel-cni
	for d in $(DESTDIR)$(CNI_BIN_DIR) $(dir $(DESTDIR)$(CNI_BIN_DIR)); do \
		[ ! -d $$d ] || rmdir --ignore-fail-on-non-empty $$d; done
	[ ! -d $(DESTDIR)$(MAN8DIR) ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$(MAN8DIR)

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C tc clean
	$(MAKE) -C tc/cni clean
	-$(MAKE) -C selftests/unit clean
	-$(MAKE) -C scripts/bench clean
	rm -rf build

.PHONY: all module tc cni-refs deps unit fuzz check check-full check-man style check-install check-debug bench bench-smoke bench-insn \
	demo install \
	install-user dkms-install dkms-uninstall uninstall clean
