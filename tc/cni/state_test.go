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
