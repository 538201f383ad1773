// SPDX-License-Identifier: GPL-2.0
//
// One file per attachment, <dataDir>/<network>/<containerID>-<ifname>,
// says what ADD made, so that DEL without prevResult and GC undo exactly
// that.

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
	return filepath.Join(dir, network, containerID+"-"+ifname), nil
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
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// loadState returns nil, nil when there is no state.
func loadState(dir, network, containerID, ifname string) (*State, error) {
	p, err := statePath(dir, network, containerID, ifname)
	if err != nil {
		return nil, err
	}
	return loadStateFile(p)
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
	return nil
}

// networkStates lists the state files of one network.
func networkStates(dir, network string) ([]*State, error) {
	if err := safeName(network); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(dir, network))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var states []*State
	for _, e := range ents {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		s, err := loadStateFile(filepath.Join(dir, network, e.Name()))
		if err != nil {
			return nil, err
		}
		if s != nil {
			states = append(states, s)
		}
	}
	return states, nil
}
