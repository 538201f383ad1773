#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""sniff_len.py: the sizes of the frames a device sends to one port.

A packet socket on DEV sees each outgoing frame as the qdisc hands it to
the driver: a GSO packet the qdisc did not split is one frame of up to
64 KB there, a split one is MTU-sized segments.  For IPv4 TCP or UDP
frames to PORT over SECONDS, prints one JSON object: frames, max_len,
over_mtu (frames longer than --mtu + 14), drops (frames the socket lost,
PACKET_STATISTICS: a lost frame could have been a long one).

  sniff_len.py --dev DEV --port PORT --seconds S [--mtu 1500] [--ready FILE]
Python 3 stdlib only.
"""

import argparse
import json
import socket
import struct
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--ready", help="file to create once capturing")
    a = ap.parse_args()

    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
    s.bind((a.dev, 0))
    if a.ready:
        open(a.ready, "w").close()
    frames = over = top = 0
    buf = bytearray(128)
    end = time.monotonic() + a.seconds
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        s.settimeout(left)
        try:
            # MSG_TRUNC: n is the frame's real length, whatever we copy.
            n, addr = s.recvfrom_into(buf, len(buf), socket.MSG_TRUNC)
        except socket.timeout:
            break
        frame = bytes(buf[:min(n, len(buf))])
        if addr[2] != PACKET_OUTGOING or len(frame) < 14 + 20 + 4:
            continue
        if struct.unpack_from("!H", frame, 12)[0] != 0x0800:
            continue
        if frame[14 + 9] not in (socket.IPPROTO_TCP, socket.IPPROTO_UDP):
            continue
        l4 = 14 + (frame[14] & 0x0f) * 4
        if len(frame) < l4 + 4 or struct.unpack_from("!H", frame, l4 + 2)[0] != a.port:
            continue
        frames += 1
        top = max(top, n)
        over += n > a.mtu + 14
    # struct tpacket_stats { unsigned int tp_packets, tp_drops; }
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    print(json.dumps({"frames": frames, "max_len": top, "over_mtu": over,
                      "drops": drops}))


if __name__ == "__main__":
    main()
