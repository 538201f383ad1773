#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# findgo.sh: print the path of the first Go toolchain that can build
# carousel-cni (go.mod asks for 1.23), of PATH's go, /usr/local/go and
# Debian's /usr/lib/go-1.*; print nothing and exit 1 if none can.
# An older go would fail on go.mod, and with GOTOOLCHAIN=local it may not
# fetch a newer one.
want_major=1
want_minor=23

for go in $(command -v go) /usr/local/go/bin/go /usr/lib/go-1.*/bin/go; do
	[ -x "$go" ] || continue
	# "go version go1.23.4 linux/amd64"; a release candidate such as
	# go1.23rc1 comes before the 1.23.0 that go.mod asks for: no match.
	v=$(GOTOOLCHAIN=local "$go" version 2>/dev/null |
		sed -n 's/^go version go\([0-9][0-9]*\)\.\([0-9][0-9]*\)[. ].*/\1 \2/p')
	[ -n "$v" ] || continue
	set -- $v
	if [ "$1" -gt $want_major ] || { [ "$1" = $want_major ] && [ "$2" -ge $want_minor ]; }; then
		echo "$go"
		exit 0
	fi
done
exit 1
