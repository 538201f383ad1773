// SPDX-License-Identifier: GPL-2.0

package main

import (
	"strings"
	"testing"
)

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       *Bandwidth
		err        string
	}{
		{"runtime", `{"runtimeConfig":{"bandwidth":{"ingressRate":8000,"ingressBurst":800}}}`,
			&Bandwidth{IngressRate: 8000, IngressBurst: 800}, ""},
		{"upstream spelling", `{"runtimeConfig":{"bandWidth":{"egressRate":8000,"egressBurst":800}}}`,
			&Bandwidth{EgressRate: 8000, EgressBurst: 800}, ""},
		{"static wins", `{"ingressRate":16000,"ingressBurst":1600,
			"runtimeConfig":{"bandwidth":{"ingressRate":8000,"ingressBurst":800}}}`,
			&Bandwidth{IngressRate: 16000, IngressBurst: 1600}, ""},
		{"none", `{}`, nil, ""},
		{"rate without burst", `{"ingressRate":8000}`, nil, "if rate is set, burst must also be set"},
		{"burst without rate", `{"egressBurst":8000}`, nil, "if burst is set, rate must also be set"},
		{"4GB burst", `{"egressRate":8000,"egressBurst":34359738360}`, nil, "burst cannot be more than 4GB"},
		{"rate too high", `{"egressRate":8796093022209,"egressBurst":8}`, nil, "rate cannot be more than"},
		{"bad ceThreshold", `{"ceThreshold":"-1ms"}`, nil, "ceThreshold"},
	} {
		c, err := parseConfig([]byte(tc.conf))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := c.bandwidth()
		if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
			t.Errorf("%s: bandwidth %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestLimitCapsBurst(t *testing.T) {
	// The runtimes' default burst, 2^32 - 1 bits, on a 10 Mbit pod:
	// capped to 20 ms of 1.25 MB/s.
	l := limit(10_000_000, 1<<32-1)
	if l.Rate != 1_250_000 || l.Burst != 25_000 || !l.capped() {
		t.Errorf("10 Mbit, 2^32-1 bits: %+v", l)
	}
	// A burst under the cap is kept as asked.
	l = limit(10_000_000, 80_000)
	if l.Burst != 10_000 || l.capped() {
		t.Errorf("10 Mbit, 10 kB: %+v", l)
	}
	if limit(0, 0) != nil {
		t.Errorf("no rate: want no class")
	}
	// The highest rate accepted cannot overflow the cap.
	l = limit(rateMaxBits, 8*(1<<32-1))
	if l.Burst != 1<<32-1 {
		t.Errorf("highest rate: %+v", l)
	}
}

func TestIfbName(t *testing.T) {
	a := ifbName("net", "c1", "eth0")
	if len(a) != 15 || !strings.HasPrefix(a, ifbPrefix) {
		t.Errorf("ifb name %q", a)
	}
	if a == ifbName("net", "c1", "eth1") || a == ifbName("net", "c2", "eth0") {
		t.Errorf("ifb names collide")
	}
}

func TestStatePathRejectsTraversal(t *testing.T) {
	if _, err := statePath("/d", "net", "../x", "eth0"); err == nil {
		t.Errorf("a container ID with a slash named a state file")
	}
}

func TestStatePathsDoNotCollide(t *testing.T) {
	a, _ := statePath("/d", "n", "abc-x", "eth0")
	b, _ := statePath("/d", "n", "abc", "x-eth0")
	if a == b {
		t.Errorf("two attachments share the state file %s", a)
	}
}
