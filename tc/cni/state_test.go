// SPDX-License-Identifier: GPL-2.0

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A temporary state file a crash left behind goes with GC once it is old,
// with its container's directory if that is then empty; a young one (an
// ADD may be writing it), a state file and another network's are kept.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	st := &State{Network: "net", ContainerID: "c1", IfName: "eth0"}
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleTempAge)
	mk := func(p string, mtime time.Time) string {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	staleBeside := mk("net/c1/.tmp-1", old)
	staleAlone := mk("net/c2/.tmp-2", old)
	young := mk("net/c3/.tmp-3", time.Now())
	other := mk("other/c4/.tmp-4", old)
	// A network whose name is a glob matching "net", and a container
	// directory that is a link to elsewhere: neither is followed.
	globbed := mk("n?t/c5/.tmp-5", old)
	target := mk("elsewhere/.tmp-6", old)
	link := filepath.Join(dir, "net", "c6")
	if err := os.Symlink(filepath.Dir(target), link); err != nil {
		t.Fatal(err)
	}

	if errs := removeStaleTemps(dir, "net", staleTempAge); len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	gone := func(p string) bool {
		_, err := os.Lstat(p)
		return os.IsNotExist(err)
	}
	for _, c := range []struct {
		path string
		gone bool
	}{
		{staleBeside, true},
		{staleAlone, true},
		{filepath.Dir(staleAlone), true},
		{young, false},
		{other, false},
		{globbed, false},
		{target, false},
		{link, false},
		{filepath.Join(dir, "net/c1/eth0"), false},
	} {
		if gone(c.path) != c.gone {
			t.Errorf("%s: gone %v, want %v", c.path, gone(c.path), c.gone)
		}
	}
	if s, err := loadState(dir, "net", "c1", "eth0"); err != nil || s == nil {
		t.Errorf("state of c1/eth0 after GC: %v, %v", s, err)
	}
	if errs := removeStaleTemps(dir, "n?t", staleTempAge); len(errs) != 0 || !gone(globbed) {
		t.Errorf("network n?t: its own old file gone %v, errors %v", gone(globbed), errs)
	}
	if errs := removeStaleTemps(dir, "../x", staleTempAge); len(errs) == 0 {
		t.Errorf("a network name with a slash was accepted")
	}
}

// A network's states are its own files only, whatever its name holds:
// "n?t" must not read net's state, "n[t" must not fail as a bad pattern,
// and a link or a temporary file among them is not read.
func TestNetworkStatesNames(t *testing.T) {
	dir := t.TempDir()
	for _, st := range []*State{
		{Network: "net", ContainerID: "c1", IfName: "eth0"},
		{Network: "n?t", ContainerID: "c2", IfName: "eth0"},
		{Network: "n[t", ContainerID: "c3", IfName: "eth0"},
	} {
		if err := st.save(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "n?t", "c2", ".tmp-1"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "net", "c1", "eth0"),
		filepath.Join(dir, "n?t", "c2", "eth1")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ network, container string }{
		{"net", "c1"}, {"n?t", "c2"}, {"n[t", "c3"},
	} {
		states, errs := networkStates(dir, c.network)
		if len(errs) != 0 {
			t.Errorf("%s: errors %v", c.network, errs)
		}
		if len(states) != 1 || states[0].ContainerID != c.container {
			t.Errorf("%s: states %+v, want only %s's", c.network, states, c.container)
		}
	}
	if states, errs := networkStates(dir, "none"); len(states) != 0 || len(errs) != 0 {
		t.Errorf("a network with no directory: %+v, %v", states, errs)
	}
}
