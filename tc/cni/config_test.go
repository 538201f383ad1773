// SPDX-License-Identifier: GPL-2.0

package main

import (
	"strings"
	"testing"
)

// parsed reports whether a case's parse succeeded as it should (want
// empty), failing the test if the error is not the one wanted.
func parsed(t *testing.T, name string, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
		return false
	}
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return false
	}
	return true
}

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
		if !parsed(t, tc.name, err, tc.err) {
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

// DEL and GC read only the name, dataDir and the valid attachments: a key
// of the wrong type elsewhere must not stop the chain's DEL.
func TestParseConfigDelIgnoresBadKeys(t *testing.T) {
	for _, tc := range []struct {
		name, conf, dir string
		valid           int
		err             string
	}{
		{"bad ceThreshold type", `{"name":"pods","ceThreshold":5}`, defaultDataDir, 0, ""},
		{"negative rate", `{"name":"pods","ingressRate":-1,"ingressBurst":8}`, defaultDataDir, 0, ""},
		{"runtime rate as a string", `{"name":"pods","runtimeConfig":{"bandwidth":{"ingressRate":"10M"}}}`,
			defaultDataDir, 0, ""},
		{"dataDir kept", `{"name":"pods","dataDir":"/run/x","egressRate":"x"}`, "/run/x", 0, ""},
		{"dataDir not a string", `{"name":"pods","dataDir":7}`, defaultDataDir, 0, ""},
		{"valid attachments", `{"name":"pods","cni.dev/valid-attachments":[{"containerID":"a","ifname":"eth0"}]}`,
			defaultDataDir, 1, ""},
		{"bad valid attachments", `{"name":"pods","cni.dev/valid-attachments":{"containerID":"a"}}`,
			"", 0, "valid-attachments"},
		{"not JSON", `{"name":`, "", 0, "failed to parse"},
	} {
		c, err := parseConfigDel([]byte(tc.conf))
		if !parsed(t, tc.name, err, tc.err) {
			continue
		}
		if c.Name != "pods" || c.dataDir() != tc.dir || len(c.ValidAttachments) != tc.valid {
			t.Errorf("%s: name %q dataDir %q %d valid attachments, want pods %q %d",
				tc.name, c.Name, c.dataDir(), len(c.ValidAttachments), tc.dir, tc.valid)
		}
	}
}
