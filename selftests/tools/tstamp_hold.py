#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""tstamp_hold.py: keep the kernel's receive-timestamp static key on.

The first socket that asks for receive timestamps (SO_TIMESTAMP*, as ping,
txtime.py and recvgaps.py do) turns netstamp_needed_key on, and the last
one to close turns it off: each time the kernel patches the branch in
netif_rx_internal() and __netif_receive_skb_core() with text_poke_bp().
Under TCG with two vCPUs that patching, while the other vCPU runs packets
through the same code, now and then ends the guest with "Oops: int3" in
those functions: QEMU's race, not the code under test.  A socket of ours
holding the key from before the first packet to after the last means no
later socket changes more than a count, so nothing is patched while
traffic flows.  Each receiver still gets the timestamps it asked for.

Prints "holding" once the key is on, then sleeps until it is killed.
"""

import signal
import socket
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # SO_TIMESTAMPNS_OLD


def main():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    time.sleep(0.5)		# the key is switched from a workqueue
    print("holding", flush=True)
    signal.pause()


if __name__ == "__main__":
    main()
