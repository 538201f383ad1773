// SPDX-License-Identifier: GPL-2.0
//
// The carousel qdisc and class in netlink.  vishvananda/netlink knows
// neither the kind nor its options, so these messages are built with its
// low-level nl package, attribute by attribute, as include/uapi/carousel.h
// defines them.

package main

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Attribute numbers, from include/uapi/carousel.h.
const (
	tcaCarouselRate        = 1 // u64 bytes/s: ceiling
	tcaCarouselDefault     = 2 // u32: minor of the default class
	tcaCarouselCEThreshold = 10
	tcaCarouselClassRate   = 1 // u64 bytes/s
	tcaCarouselClassBurst  = 2 // u32 bytes
)

// The qdisc carousel-cni puts on a device: root 1:, everything in class
// 1:1 (the default), so the device is shaped as one class.
const (
	tcHRoot       = 0xffffffff
	shaperMajor   = 1
	shaperMinor   = 1
	shaperHandle  = shaperMajor << 16
	shaperClassID = shaperMajor<<16 | shaperMinor
)

// Shaper is what a device's root carousel says, read back from the kernel.
type Shaper struct {
	Default     uint32
	CEThreshold uint32 // ns
	Ceiling     uint64 // bytes/s
	Class       *Limit // class 1:1, nil if there is none
}

func tcRequest(cmd, flags int, ifindex int, handle, parent uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(cmd, flags|unix.NLM_F_ACK)
	req.AddData(&nl.TcMsg{
		Family:  unix.AF_UNSPEC,
		Ifindex: int32(ifindex),
		Handle:  handle,
		Parent:  parent,
	})
	return req
}

// Netlink carries numbers in the host's byte order.
func u32(v uint32) []byte {
	b := make([]byte, 4)
	nl.NativeEndian().PutUint32(b, v)
	return b
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	nl.NativeEndian().PutUint64(b, v)
	return b
}

// addShaper puts a carousel, whose class 1:1 (the default) has the given
// limit, as the root qdisc of ifindex, in place of the device's default
// root only: a root someone configured is not replaced (EEXIST).
func addShaper(ifindex int, l *Limit, ceNs uint32) error {
	req := tcRequest(unix.RTM_NEWQDISC, unix.NLM_F_CREATE|unix.NLM_F_EXCL,
		ifindex, shaperHandle, tcHRoot)
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("carousel")))
	opts := nl.NewRtAttr(nl.TCA_OPTIONS|unix.NLA_F_NESTED, nil)
	opts.AddRtAttr(tcaCarouselDefault, u32(shaperMinor))
	opts.AddRtAttr(tcaCarouselCEThreshold, u32(ceNs))
	req.AddData(opts)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); errors.Is(err, syscall.EEXIST) {
		return fmt.Errorf("ifindex %d has a root qdisc already, which carousel-cni does not replace: %w",
			ifindex, err)
	} else if err != nil {
		return fmt.Errorf("carousel qdisc on ifindex %d: %w", ifindex, err)
	}

	req = tcRequest(unix.RTM_NEWTCLASS, unix.NLM_F_CREATE|unix.NLM_F_EXCL,
		ifindex, shaperClassID, shaperHandle)
	req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated("carousel")))
	opts = nl.NewRtAttr(nl.TCA_OPTIONS|unix.NLA_F_NESTED, nil)
	opts.AddRtAttr(tcaCarouselClassRate, u64(l.Rate))
	opts.AddRtAttr(tcaCarouselClassBurst, u32(l.Burst))
	req.AddData(opts)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		// No qdisc without its default class is left behind.
		del := tcRequest(unix.RTM_DELQDISC, 0, ifindex, shaperHandle, tcHRoot)
		_, _ = del.Execute(unix.NETLINK_ROUTE, 0)
		return fmt.Errorf("carousel class on ifindex %d: %w", ifindex, err)
	}
	return nil
}

// delShaper removes the root qdisc of ifindex if it is carousel-cni's.
func delShaper(ifindex int) error {
	s, err := readShaper(ifindex)
	if err != nil || s == nil {
		return err
	}
	req := tcRequest(unix.RTM_DELQDISC, 0, ifindex, shaperHandle, tcHRoot)
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil && !isGone(err) {
		return fmt.Errorf("deleting the carousel qdisc on ifindex %d: %w", ifindex, err)
	}
	return nil
}

func kindOf(attrs []syscall.NetlinkRouteAttr) string {
	for _, a := range attrs {
		if a.Attr.Type == nl.TCA_KIND {
			return unix.ByteSliceToString(a.Value)
		}
	}
	return ""
}

func optionsOf(attrs []syscall.NetlinkRouteAttr) ([]syscall.NetlinkRouteAttr, error) {
	for _, a := range attrs {
		if a.Attr.Type&^unix.NLA_F_NESTED == nl.TCA_OPTIONS {
			return nl.ParseRouteAttr(a.Value)
		}
	}
	return nil, nil
}

// dump returns the attributes of every qdisc (or class) of ifindex, with
// its tcmsg.
func dump(cmd int, ifindex int) ([]*nl.TcMsg, [][]syscall.NetlinkRouteAttr, error) {
	var msgs [][]byte
	var err error
	// A dump that a concurrent change interrupted is taken again.
	for try := 0; try < 10; try++ {
		req := nl.NewNetlinkRequest(cmd, unix.NLM_F_DUMP)
		req.AddData(&nl.TcMsg{Family: unix.AF_UNSPEC, Ifindex: int32(ifindex)})
		msgs, err = req.Execute(unix.NETLINK_ROUTE, 0)
		if !errors.Is(err, nl.ErrDumpInterrupted) {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	var hdrs []*nl.TcMsg
	var attrs [][]syscall.NetlinkRouteAttr
	for _, m := range msgs {
		if len(m) < nl.SizeofTcMsg {
			continue
		}
		t := nl.DeserializeTcMsg(m)
		if int(t.Ifindex) != ifindex {
			continue
		}
		a, err := nl.ParseRouteAttr(m[nl.SizeofTcMsg:])
		if err != nil {
			return nil, nil, err
		}
		hdrs = append(hdrs, t)
		attrs = append(attrs, a)
	}
	return hdrs, attrs, nil
}

// readShaper reads back carousel-cni's root qdisc of ifindex: nil, nil
// if the root is not a carousel with handle 1:.
func readShaper(ifindex int) (*Shaper, error) {
	hdrs, attrs, err := dump(unix.RTM_GETQDISC, ifindex)
	if err != nil {
		return nil, fmt.Errorf("listing the qdiscs of ifindex %d: %w", ifindex, err)
	}
	var s *Shaper
	for i, t := range hdrs {
		if t.Parent != tcHRoot || t.Handle != shaperHandle ||
			kindOf(attrs[i]) != "carousel" {
			continue
		}
		opts, err := optionsOf(attrs[i])
		if err != nil {
			return nil, err
		}
		s = &Shaper{}
		for _, o := range opts {
			switch o.Attr.Type {
			case tcaCarouselDefault:
				s.Default = nl.NativeEndian().Uint32(o.Value)
			case tcaCarouselCEThreshold:
				s.CEThreshold = nl.NativeEndian().Uint32(o.Value)
			case tcaCarouselRate:
				s.Ceiling = nl.NativeEndian().Uint64(o.Value)
			}
		}
	}
	if s == nil {
		return nil, nil
	}

	hdrs, attrs, err = dump(unix.RTM_GETTCLASS, ifindex)
	if err != nil {
		return nil, fmt.Errorf("listing the classes of ifindex %d: %w", ifindex, err)
	}
	for i, t := range hdrs {
		if t.Handle != shaperClassID || kindOf(attrs[i]) != "carousel" {
			continue
		}
		opts, err := optionsOf(attrs[i])
		if err != nil {
			return nil, err
		}
		s.Class = &Limit{}
		for _, o := range opts {
			switch o.Attr.Type {
			case tcaCarouselClassRate:
				s.Class.Rate = nl.NativeEndian().Uint64(o.Value)
			case tcaCarouselClassBurst:
				s.Class.Burst = nl.NativeEndian().Uint32(o.Value)
			}
		}
	}
	return s, nil
}

// differs says how s differs from what carousel-cni set up, "" if not.
func (s *Shaper) differs(l *Limit, ceNs uint32) string {
	switch {
	case s == nil:
		return "no carousel root qdisc"
	case s.Default != shaperMinor:
		return fmt.Sprintf("default class is %d, not %d", s.Default, shaperMinor)
	case s.CEThreshold != ceNs:
		return fmt.Sprintf("ce_threshold is %d ns, not %d ns", s.CEThreshold, ceNs)
	case s.Ceiling != 0:
		return fmt.Sprintf("a ceiling of %d bytes/s was added", s.Ceiling)
	case s.Class == nil:
		return "class 1:1 is missing"
	case s.Class.Rate != l.Rate:
		return fmt.Sprintf("class 1:1 rate is %d bytes/s, not %d", s.Class.Rate, l.Rate)
	case s.Class.Burst != l.Burst:
		return fmt.Sprintf("class 1:1 burst is %d bytes, not %d", s.Class.Burst, l.Burst)
	}
	return ""
}
