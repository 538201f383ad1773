#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""sniff_seq.py: the order in which the qdisc releases a UDP flow.

A packet socket on the qdisc's device sees each outgoing packet when the
qdisc hands it to the driver (dev_queue_xmit_nit(), under the qdisc's
running state, so in release order).  For UDP datagrams to PORT whose
payload starts with a sequence number (txtime.py, udpsend.py), prints one
JSON object: captured, reorders (a sequence lower than one seen before),
first_seq, last_seq.  Stops after COUNT datagrams or TIMEOUT s idle.

  sniff_seq.py --dev DEV --port PORT --count N [--timeout S] [--ready FILE]
"""

import argparse
import json
import socket
import struct

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--ready", help="file to create once capturing")
    a = ap.parse_args()

    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((a.dev, 0))
    s.settimeout(a.timeout)
    if a.ready:
        open(a.ready, "w").close()

    captured = reorders = 0
    top = first = last = None
    while captured < a.count:
        try:
            frame, addr = s.recvfrom(256)
        except socket.timeout:
            break
        if addr[2] != PACKET_OUTGOING or len(frame) < 14 + 20 + 8 + 8:
            continue
        if struct.unpack_from("!H", frame, 12)[0] != 0x0800:
            continue
        ihl = (frame[14] & 0x0f) * 4
        if frame[14 + 9] != socket.IPPROTO_UDP:
            continue
        udp = 14 + ihl
        if struct.unpack_from("!H", frame, udp + 2)[0] != a.port:
            continue
        seq = struct.unpack_from("!Q", frame, udp + 8)[0]
        captured += 1
        if top is not None and seq < top:
            reorders += 1
        top = seq if top is None else max(top, seq)
        first = seq if first is None else first
        last = seq
    print(json.dumps({"captured": captured, "reorders": reorders,
                      "first_seq": first, "last_seq": last}))


if __name__ == "__main__":
    main()
