// SPDX-License-Identifier: GPL-2.0
//
// Traffic out of the pod: the host-side veth receives it, so it is
// redirected from the veth's ingress (a clsact qdisc and a matchall
// filter with a mirred action) to an ifb, whose root is the carousel.

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"syscall"

	"github.com/containernetworking/plugins/pkg/netlinksafe"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
)

const (
	ifbPrefix = "ccni"
	// The alias of an ifb: prefix, network, container ID, interface.
	aliasPrefix = "carousel-cni"
	// The redirect filter's priority and handle on the veth's ingress.
	redirectPrio   = 0xca05
	redirectHandle = 1
)

// ifbName is the ifb of one attachment: 15 characters, the most a link
// name has.
func ifbName(network, containerID, ifname string) string {
	h := sha256.Sum256([]byte(network + "\x00" + containerID + "\x00" + ifname))
	return ifbPrefix + hex.EncodeToString(h[:])[:15-len(ifbPrefix)]
}

func ifbAlias(network, containerID, ifname string) string {
	return aliasPrefix + " " + network + " " + containerID + " " + ifname
}

func createIfb(name, alias string, mtu int) (netlink.Link, error) {
	ifb := &netlink.Ifb{LinkAttrs: netlink.LinkAttrs{Name: name, MTU: mtu}}
	if err := netlink.LinkAdd(ifb); err != nil {
		return nil, fmt.Errorf("adding ifb %s: %w", name, err)
	}
	link, err := netlinksafe.LinkByName(name)
	if err != nil {
		return nil, err
	}
	// A half-made ifb goes at once: GC finds ifbs by their alias.
	if err := netlink.LinkSetAlias(link, alias); err != nil {
		_ = netlink.LinkDel(link)
		return nil, fmt.Errorf("naming ifb %s: %w", name, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		_ = netlink.LinkDel(link)
		return nil, fmt.Errorf("setting ifb %s up: %w", name, err)
	}
	return link, nil
}

// delLink deletes a link by name; a link already gone is not an error.
func delLink(name string) error {
	link, err := netlinksafe.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return err
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("deleting %s: %w", name, err)
	}
	return nil
}

// hasClsact says whether link has a clsact, or an ingress qdisc (which
// takes the same filters on its ingress hook).
func hasClsact(link netlink.Link) (bool, error) {
	return hasKind(link, "clsact", "ingress")
}

func hasKind(link netlink.Link, kinds ...string) (bool, error) {
	qdiscs, err := netlinksafe.QdiscList(link)
	if err != nil {
		return false, err
	}
	for _, q := range qdiscs {
		for _, k := range kinds {
			if q.Attrs().Parent == netlink.HANDLE_CLSACT && q.Type() == k {
				return true, nil
			}
		}
	}
	return false, nil
}

func clsact(link netlink.Link) netlink.Qdisc {
	return &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{
			LinkIndex: link.Attrs().Index,
			Handle:    netlink.MakeHandle(0xffff, 0),
			Parent:    netlink.HANDLE_CLSACT,
		},
		QdiscType: "clsact",
	}
}

// addRedirect sends everything that reaches link's ingress to ifb,
// adding clsact first if the caller found none (hasClsact).  It says
// whether it added clsact: one that appeared in between is not its own.
func addRedirect(link, ifb netlink.Link, addClsact bool) (bool, error) {
	if addClsact {
		err := netlink.QdiscAdd(clsact(link))
		if errors.Is(err, syscall.EEXIST) {
			addClsact = false
		} else if err != nil {
			return false, fmt.Errorf("adding clsact to %s: %w", link.Attrs().Name, err)
		}
	}
	filter := &netlink.MatchAll{
		FilterAttrs: netlink.FilterAttrs{
			LinkIndex: link.Attrs().Index,
			Parent:    netlink.HANDLE_MIN_INGRESS,
			Priority:  redirectPrio,
			Handle:    redirectHandle,
			Protocol:  0x0003, // ETH_P_ALL, in host order: nl converts
		},
		Actions: []netlink.Action{netlink.NewMirredAction(ifb.Attrs().Index)},
	}
	if err := netlink.FilterAdd(filter); err != nil {
		return addClsact, fmt.Errorf("redirecting %s to %s: %w",
			link.Attrs().Name, ifb.Attrs().Name, err)
	}
	return addClsact, nil
}

// ours says whether f is carousel-cni's redirect filter.
func ours(f netlink.Filter) bool {
	m, ok := f.(*netlink.MatchAll)
	return ok && m.Priority == redirectPrio && m.Handle == redirectHandle
}

func listFilters(link netlink.Link, parent uint32) ([]netlink.Filter, error) {
	for try := 0; ; try++ {
		f, err := netlink.FilterList(link, parent)
		if !errors.Is(err, nl.ErrDumpInterrupted) || try == 10 {
			return f, err
		}
	}
}

// redirectTo says which ifindex link's redirect filter sends to, 0 if
// it has none.
func redirectTo(link netlink.Link) (int, error) {
	filters, err := listFilters(link, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		return 0, err
	}
	for _, f := range filters {
		if !ours(f) {
			continue
		}
		for _, a := range f.(*netlink.MatchAll).Actions {
			if r, ok := a.(*netlink.MirredAction); ok &&
				r.MirredAction == netlink.TCA_EGRESS_REDIR {
				return r.Ifindex, nil
			}
		}
	}
	return 0, nil
}

// delRedirect undoes addRedirect: its filter, and clsact if ADD added it
// and no one else's filter is on it now.
func delRedirect(link netlink.Link, ownClsact bool) error {
	filters, err := listFilters(link, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		return err
	}
	others := 0
	for _, f := range filters {
		if !ours(f) {
			others++
			continue
		}
		if err := netlink.FilterDel(f); err != nil && !isGone(err) {
			return fmt.Errorf("deleting the redirect of %s: %w", link.Attrs().Name, err)
		}
	}
	if !ownClsact || others > 0 {
		return nil
	}
	// Gone already (the kernel answers EINVAL then, not ENOENT), or
	// an ingress qdisc now: not ours to delete.
	if has, err := hasKind(link, "clsact"); err != nil || !has {
		return err
	}
	if egress, err := listFilters(link, netlink.HANDLE_MIN_EGRESS); err != nil || len(egress) > 0 {
		return err
	}
	if err := netlink.QdiscDel(clsact(link)); err != nil && !isGone(err) {
		return fmt.Errorf("deleting clsact of %s: %w", link.Attrs().Name, err)
	}
	return nil
}
