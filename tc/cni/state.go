// SPDX-License-Identifier: GPL-2.0
//
// One file per attachment, <dataDir>/<network>/<containerID>/<ifname>,
// says what ADD made, so that DEL without prevResult and GC undo exactly
// that.  (skel has validated both names: no slash, no NUL.)

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type State struct {
	Network     string `json:"network"`
	ContainerID string `json:"containerID"`
	IfName      string `json:"ifname"`
	HostIf      string `json:"hostIf"`
	HostIndex   int    `json:"hostIndex"`
	Ingress     *Limit `json:"ingress,omitempty"`
	Egress      *Limit `json:"egress,omitempty"`
	Ifb         string `json:"ifb,omitempty"`
	OwnClsact   bool   `json:"ownClsact,omitempty"`
	CENs        uint32 `json:"ceThresholdNs"`
}

func safeName(s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("%q cannot name a state file", s)
	}
	return nil
}

func statePath(dir, network, containerID, ifname string) (string, error) {
	for _, s := range []string{network, containerID, ifname} {
		if err := safeName(s); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, network, containerID, ifname), nil
}

func (s *State) save(dir string) error {
	p, err := statePath(dir, s.Network, s.ContainerID, s.IfName)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// Written whole or not at all: a temporary file (a name no
	// interface can have), synced, then renamed over.
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// loadState returns nil, nil when there is no state.
func loadState(dir, network, containerID, ifname string) (*State, error) {
	p, err := statePath(dir, network, containerID, ifname)
	if err != nil {
		return nil, err
	}
	s, err := loadStateFile(p)
	if err == nil && s != nil &&
		(s.Network != network || s.ContainerID != containerID || s.IfName != ifname) {
		return nil, fmt.Errorf("state file %s names another attachment", p)
	}
	return s, err
}

func loadStateFile(p string) (*State, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := &State{}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("state file %s: %w", p, err)
	}
	return s, nil
}

func removeState(dir, network, containerID, ifname string) error {
	p, err := statePath(dir, network, containerID, ifname)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// The container's directory goes with its last attachment.
	_ = os.Remove(filepath.Dir(p))
	return nil
}

// eachContainer calls fn with the path and entries of each container
// directory of one network.  The names are read, not globbed: a
// network's name may hold glob characters ("n?t" would match net's
// files, "n[t" no pattern at all).  Only real directories are entered
// (ReadDir does not follow links).  A network with no directory has no
// containers; what cannot be read is returned.
func eachContainer(dir, network string, fn func(cpath string, files []fs.DirEntry)) []error {
	if err := safeName(network); err != nil {
		return []error{err}
	}
	ndir := filepath.Join(dir, network)
	cdirs, err := os.ReadDir(ndir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, cd := range cdirs {
		if !cd.IsDir() {
			continue
		}
		cpath := filepath.Join(ndir, cd.Name())
		files, err := os.ReadDir(cpath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fn(cpath, files)
	}
	return errs
}

// networkStates lists the state files of one network (eachContainer;
// regular files only).  A file that cannot be read is reported in errs
// and skipped.
func networkStates(dir, network string) (states []*State, errs []error) {
	walkErrs := eachContainer(dir, network, func(cpath string, files []fs.DirEntry) {
		for _, fe := range files {
			if strings.HasPrefix(fe.Name(), ".") || !fe.Type().IsRegular() {
				continue
			}
			f := filepath.Join(cpath, fe.Name())
			s, err := loadStateFile(f)
			if err == nil && s != nil && (s.Network != network ||
				s.ContainerID != filepath.Base(cpath) || s.IfName != fe.Name()) {
				err = fmt.Errorf("state file %s names another attachment", f)
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if s != nil {
				states = append(states, s)
			}
		}
	})
	return states, append(errs, walkErrs...)
}

// staleTempAge: how old a temporary state file (save's ".tmp-*") must be
// before GC takes it for one that a crash left behind.  save() renames
// its file within milliseconds; a runtime serialises ADD and GC of one
// network, so this only guards against a slow disk.
const staleTempAge = 10 * time.Minute

// removeStaleTemps removes the temporary state files of one network that
// are older than age, then the container directories left empty
// (eachContainer; regular files only: a symbolic link is left as it is).  What cannot be removed is
// reported in errs.
func removeStaleTemps(dir, network string, age time.Duration) (errs []error) {
	walkErrs := eachContainer(dir, network, func(cpath string, files []fs.DirEntry) {
		removed := false
		for _, f := range files {
			if !strings.HasPrefix(f.Name(), ".tmp-") || !f.Type().IsRegular() {
				continue
			}
			p := filepath.Join(cpath, f.Name())
			fi, err := f.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if time.Since(fi.ModTime()) < age {
				continue
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
				continue
			}
			removed = true
		}
		if removed {
			// Fails, as it should, while the directory holds anything.
			_ = os.Remove(cpath)
		}
	})
	return append(errs, walkErrs...)
}
