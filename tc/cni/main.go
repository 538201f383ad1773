// SPDX-License-Identifier: GPL-2.0
//
// carousel-cni: a chained CNI plugin that shapes a pod with sch_carousel,
// configured as the `bandwidth` plugin is (its runtimeConfig.bandwidth
// capability and static keys).
//
//   into the pod   a carousel root on the host-side veth, one class (1:1,
//                  the default) at ingressRate
//   out of it      the veth's ingress redirected to an ifb whose root is a
//                  carousel with one class at egressRate
//
// Both set ce_threshold, so ECN-capable pods are told of a queue instead
// of losing packets.  docs/kubernetes.md says why the ifb, and what
// backpressure a pod gets.

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/containernetworking/plugins/pkg/ns"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

func isGone(err error) bool {
	var nf netlink.LinkNotFoundError
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENODEV) ||
		errors.As(err, &nf)
}

// hostInterface finds the host side of the pod's veth: the peer of
// ifName in netns, which must be one of the previous result's host
// interfaces.
func hostInterface(result *current.Result, ifName, netnsPath string) (netlink.Link, error) {
	netns, err := ns.GetNS(netnsPath)
	if err != nil {
		return nil, fmt.Errorf("failed to open netns %q: %v", netnsPath, err)
	}
	defer netns.Close()

	peer := 0
	err = netns.Do(func(_ ns.NetNS) error {
		_, peer, err = ip.GetVethPeerIfindex(ifName)
		return err
	})
	if peer <= 0 {
		return nil, fmt.Errorf("container interface %s has no veth peer: %v", ifName, err)
	}
	link, err := netlink.LinkByIndex(peer)
	if err != nil {
		return nil, fmt.Errorf("veth peer with index %d is not in the host netns: %w", peer, err)
	}
	for _, iface := range result.Interfaces {
		if iface.Sandbox == "" && iface.Name == link.Attrs().Name {
			return link, nil
		}
	}
	return nil, fmt.Errorf("no veth peer of container interface %s in the previous result", ifName)
}

func logCap(dir string, l *Limit) {
	if l.capped() {
		fmt.Fprintf(os.Stderr,
			"carousel-cni: %s burst of %d bytes capped to %d bytes (%v at %d bytes/s)\n",
			dir, l.Requested, l.Burst, burstCapTime, l.Rate)
	}
}

// made says which of an attachment's objects to remove.
type made struct{ ingress, redirect, ifb bool }

// teardown undoes what st says ADD made; what is gone already is fine.
func teardown(st *State) error {
	return teardownParts(st, made{st.Ingress != nil, st.Ifb != "", st.Ifb != ""})
}

func teardownParts(st *State, m made) error {
	var errs []error
	host, err := netlink.LinkByIndex(st.HostIndex)
	if err != nil && !isGone(err) {
		return err
	}
	if err != nil || host.Attrs().Name != st.HostIf {
		host = nil // gone, or the index was reused: not ours
	}
	if m.ifb && st.Ifb != ifbName(st.Network, st.ContainerID, st.IfName) {
		return fmt.Errorf("state of %s/%s names ifb %q, not its own", st.ContainerID, st.IfName, st.Ifb)
	}
	if host != nil && m.ingress {
		if err := delShaper(st.HostIndex); err != nil && !isGone(err) {
			errs = append(errs, err)
		}
	}
	if host != nil && m.redirect {
		if err := delRedirect(host, st.OwnClsact); err != nil && !isGone(err) {
			errs = append(errs, err)
		}
	}
	if m.ifb {
		if err := delLink(st.Ifb); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func cmdAdd(args *skel.CmdArgs) error {
	conf, err := parseConfig(args.StdinData)
	if err != nil {
		return err
	}
	if conf.PrevResult == nil {
		return fmt.Errorf("must be called as chained plugin")
	}
	dir := conf.dataDir()

	// An ADD again for the same attachment starts from nothing.
	if old, err := loadState(dir, conf.Name, args.ContainerID, args.IfName); err != nil {
		return err
	} else if old != nil {
		if err := teardown(old); err != nil {
			return err
		}
		if err := removeState(dir, old.Network, old.ContainerID, old.IfName); err != nil {
			return err
		}
	}

	bw := conf.bandwidth()
	if bw == nil || bw.isZero() {
		return types.PrintResult(conf.PrevResult, conf.CNIVersion)
	}
	result, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return fmt.Errorf("could not convert result to current version: %v", err)
	}
	host, err := hostInterface(result, args.IfName, args.Netns)
	if err != nil {
		return err
	}
	ce, _ := conf.ceThreshold()

	st := &State{
		Network:     conf.Name,
		ContainerID: args.ContainerID,
		IfName:      args.IfName,
		HostIf:      host.Attrs().Name,
		HostIndex:   host.Attrs().Index,
		Ingress:     limit(bw.IngressRate, bw.IngressBurst),
		Egress:      limit(bw.EgressRate, bw.EgressBurst),
		CENs:        uint32(ce.Nanoseconds()),
	}
	if st.Egress != nil {
		st.Ifb = ifbName(conf.Name, args.ContainerID, args.IfName)
		had, err := hasClsact(host)
		if err != nil {
			return err
		}
		st.OwnClsact = !had
	}
	// The state is written before anything is made, so that a DEL or
	// GC after a crash anywhere below removes what was made.
	if err := st.save(dir); err != nil {
		return fmt.Errorf("saving state in %s: %w", dir, err)
	}

	var m made
	err = add(st, host, result, &m)
	if err == nil {
		// clsact may have been added by someone else in between.
		err = st.save(dir)
	}
	if err != nil {
		// Only what this ADD made goes: a root qdisc or clsact that
		// was there before is not carousel-cni's.
		if terr := teardownParts(st, m); terr == nil {
			_ = removeState(dir, st.Network, st.ContainerID, st.IfName)
		} else {
			// What is left for DEL or GC is what this ADD made.
			if !m.ingress {
				st.Ingress = nil
			}
			if !m.ifb {
				st.Ifb = ""
			}
			if !m.redirect {
				st.OwnClsact = false
			}
			_ = st.save(dir)
		}
		return err
	}
	logCap("ingress", st.Ingress)
	logCap("egress", st.Egress)
	return types.PrintResult(result, conf.CNIVersion)
}

func add(st *State, host netlink.Link, result *current.Result, m *made) error {
	if st.Ingress != nil {
		if err := addShaper(host.Attrs().Index, st.Ingress, st.CENs); err != nil {
			return fmt.Errorf("%s: %w", host.Attrs().Name, err)
		}
		m.ingress = true
	}
	if st.Egress == nil {
		return nil
	}
	ifb, err := createIfb(st.Ifb, ifbAlias(st.Network, st.ContainerID, st.IfName),
		host.Attrs().MTU)
	if err != nil {
		return err
	}
	m.ifb = true
	if err := addShaper(ifb.Attrs().Index, st.Egress, st.CENs); err != nil {
		return err
	}
	m.redirect = true
	if st.OwnClsact, err = addRedirect(host, ifb, st.OwnClsact); err != nil {
		return err
	}
	result.Interfaces = append(result.Interfaces, &current.Interface{
		Name: st.Ifb,
		Mac:  ifb.Attrs().HardwareAddr.String(),
	})
	return nil
}

func cmdDel(args *skel.CmdArgs) error {
	conf, err := parseConfigDel(args.StdinData)
	if err != nil {
		return err
	}
	dir := conf.dataDir()
	st, err := loadState(dir, conf.Name, args.ContainerID, args.IfName)
	if err != nil {
		// A state that cannot be read must not keep a pod from
		// going: remove what can be found by name, and the state.
		fmt.Fprintf(os.Stderr, "carousel-cni: %v: removing what its name finds\n", err)
		st = nil
	}
	if st != nil {
		err = teardown(st)
	} else {
		// Nothing recorded: at most an ifb of an ADD that failed
		// before its state was written.
		err = delLink(ifbName(conf.Name, args.ContainerID, args.IfName))
	}
	if err != nil {
		return err
	}
	return removeState(dir, conf.Name, args.ContainerID, args.IfName)
}

func cmdCheck(args *skel.CmdArgs) error {
	conf, err := parseConfig(args.StdinData)
	if err != nil {
		return err
	}
	if conf.PrevResult == nil {
		return fmt.Errorf("must be called as a chained plugin")
	}
	result, err := current.NewResultFromResult(conf.PrevResult)
	if err != nil {
		return fmt.Errorf("could not convert result to current version: %v", err)
	}
	bw := conf.bandwidth()
	if bw == nil || bw.isZero() {
		return nil
	}
	host, err := hostInterface(result, args.IfName, args.Netns)
	if err != nil {
		return err
	}
	ce, _ := conf.ceThreshold()
	ceNs := uint32(ce.Nanoseconds())

	st, err := loadState(conf.dataDir(), conf.Name, args.ContainerID, args.IfName)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("no state for %s/%s: was ADD called?", args.ContainerID, args.IfName)
	}

	if l := limit(bw.IngressRate, bw.IngressBurst); l != nil {
		s, err := readShaper(host.Attrs().Index)
		if err != nil {
			return err
		}
		if d := s.differs(l, ceNs); d != "" {
			return fmt.Errorf("ingress shaper on %s: %s", host.Attrs().Name, d)
		}
	}
	if l := limit(bw.EgressRate, bw.EgressBurst); l != nil {
		name := ifbName(conf.Name, args.ContainerID, args.IfName)
		ifb, err := netlinksafe.LinkByName(name)
		if err != nil {
			return fmt.Errorf("egress ifb %s: %w", name, err)
		}
		if ifb.Attrs().Flags&net.FlagUp == 0 {
			return fmt.Errorf("egress ifb %s is down: the pod's egress is dropped", name)
		}
		s, err := readShaper(ifb.Attrs().Index)
		if err != nil {
			return err
		}
		if d := s.differs(l, ceNs); d != "" {
			return fmt.Errorf("egress shaper on %s: %s", name, d)
		}
		to, err := redirectTo(host)
		if err != nil {
			return err
		}
		if to != ifb.Attrs().Index {
			return fmt.Errorf("%s's ingress is not redirected to %s", host.Attrs().Name, name)
		}
	}
	return nil
}

// cmdGC removes every attachment of this network that is not in
// cni.dev/valid-attachments: by its state file, and any ifb whose alias
// names it (an ADD that died before its state was written); and the
// temporary state files a crash left (removeStaleTemps).
func cmdGC(args *skel.CmdArgs) error {
	conf, err := parseConfigDel(args.StdinData)
	if err != nil {
		return err
	}
	valid := map[types.GCAttachment]bool{}
	for _, a := range conf.ValidAttachments {
		valid[a] = true
	}
	dir := conf.dataDir()
	// Whatever fails, GC goes on with the rest and reports it all.
	states, errs := networkStates(dir, conf.Name)
	for _, st := range states {
		if valid[types.GCAttachment{ContainerID: st.ContainerID, IfName: st.IfName}] {
			continue
		}
		if err := teardown(st); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := removeState(dir, st.Network, st.ContainerID, st.IfName); err != nil {
			errs = append(errs, err)
		}
	}
	// A temporary state file that a crash left between its write and
	// its rename.
	errs = append(errs, removeStaleTemps(dir, conf.Name, staleTempAge)...)
	links, err := netlinksafe.LinkList()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, l := range links {
		// An ifb is carousel-cni's if its alias names an attachment
		// and its name is that attachment's.
		f := strings.Fields(l.Attrs().Alias)
		if l.Type() != "ifb" || len(f) != 4 || f[0] != aliasPrefix || f[1] != conf.Name ||
			l.Attrs().Name != ifbName(f[1], f[2], f[3]) {
			continue
		}
		if valid[types.GCAttachment{ContainerID: f[2], IfName: f[3]}] {
			continue
		}
		if err := delLink(l.Attrs().Name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// moduleAvailable says whether the running kernel has a module, loaded,
// built in or installed.
func moduleAvailable(name string) bool {
	if _, err := os.Stat(filepath.Join("/sys/module", name)); err == nil {
		return true
	}
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	base := filepath.Join("/lib/modules", unix.ByteSliceToString(u.Release[:]))
	for _, f := range []string{"modules.builtin", "modules.dep"} {
		b, err := os.ReadFile(filepath.Join(base, f))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			path, _, _ := strings.Cut(line, ":")
			m := filepath.Base(path)
			m, _, _ = strings.Cut(m, ".ko")
			if strings.ReplaceAll(m, "-", "_") == name {
				return true
			}
		}
	}
	return false
}

// The spec's code for STATUS: the plugin cannot serve ADD (the library
// names codes up to 11 only).
const errPluginNotAvailable uint = 50

// cmdStatus fails when an ADD could not work: a kernel module it needs is
// missing, or its state directory cannot be written.
func cmdStatus(args *skel.CmdArgs) error {
	conf, err := parseConfig(args.StdinData)
	if err != nil {
		return err
	}
	for _, m := range []string{"sch_carousel", "ifb", "act_mirred", "cls_matchall", "sch_ingress"} {
		if !moduleAvailable(m) {
			return types.NewError(errPluginNotAvailable,
				fmt.Sprintf("kernel module %s is not available", m),
				"carousel-cni needs sch_carousel (make dkms-install), ifb, act_mirred, cls_matchall and sch_ingress")
		}
	}
	if err := os.MkdirAll(conf.dataDir(), 0o700); err != nil {
		return types.NewError(errPluginNotAvailable,
			"state directory cannot be made", err.Error())
	}
	return nil
}

func main() {
	nl.EnableErrorMessageReporting = true
	skel.PluginMainFuncs(skel.CNIFuncs{
		Add:    cmdAdd,
		Del:    cmdDel,
		Check:  cmdCheck,
		GC:     cmdGC,
		Status: cmdStatus,
	}, version.VersionsStartingFrom("0.3.0"), "carousel-cni: sch_carousel shaping for pods")
}
