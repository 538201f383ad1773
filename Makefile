# SPDX-License-Identifier: GPL-2.0
#
# sch_carousel: a timing-wheel shaper qdisc.
#
#   make                     module (for KDIR), the tc plugin and carousel-cgroup
#   make KDIR=/lib/modules/<ver>/build
#   make check               unit tests, then the selftests in a VM on both kernels
#   make demo                a VM that shapes real traffic through a few classes
#   make deps                install what the above need (idempotent)
#   make install / uninstall module under /lib/modules/<ver>/extra, plugin in tc's lib dir
#   make check-man           the man page renders without a warning

KVER ?= $(shell uname -r)
KDIR ?= $(firstword $(wildcard /lib/modules/$(KVER)/build) \
		    $(lastword $(sort $(wildcard /lib/modules/*/build))))
# Where Debian's tc looks for q_<kind>.so.
TC_LIB_DIR_INSTALL ?= $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/tc /usr/lib/tc /usr/lib64/tc) \
			/usr/lib/tc)

all: module tc

module:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || \
		{ echo "no kernel build dir: install linux-headers or pass KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

tc:
	$(MAKE) -C tc

deps:
	bash scripts/deps.sh

unit:
	$(MAKE) -C selftests/unit run

check: deps tc
	bash scripts/check.sh

check-man:
	bash scripts/check-man.sh

demo: deps tc
	bash scripts/demo.sh

install: module tc
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra modules_install
	depmod -a $(notdir $(patsubst %/build,%,$(KDIR)))
	install -D -m 0644 tc/q_carousel.so $(DESTDIR)$(TC_LIB_DIR_INSTALL)/q_carousel.so
	install -D -m 0755 tc/carousel-cgroup $(DESTDIR)/usr/local/sbin/carousel-cgroup

uninstall:
	rm -f /lib/modules/$(notdir $(patsubst %/build,%,$(KDIR)))/extra/sch_carousel.ko
	depmod -a $(notdir $(patsubst %/build,%,$(KDIR)))
	rm -f $(DESTDIR)$(TC_LIB_DIR_INSTALL)/q_carousel.so
	rm -f $(DESTDIR)/usr/local/sbin/carousel-cgroup

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	$(MAKE) -C tc clean
	-$(MAKE) -C selftests/unit clean
	rm -rf build

.PHONY: all module tc deps unit check check-man demo install uninstall clean
