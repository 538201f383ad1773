// SPDX-License-Identifier: GPL-2.0
/*
 * prio.bpf.c - tc clsact egress program for the CPU-per-packet benchmark:
 * skb->priority = 1:<UDP source port>, so that pktgen's round robin over
 * source ports 1..N picks one of N classes of carousel or htb by the
 * priority alone (no classifier in the qdisc).  It runs in front of every
 * qdisc under test alike; fq and pfifo ignore the priority.  Other
 * packets pass untouched.
 *
 * Section "classifier_hash" also sets skb->hash from the source port, as
 * a socket's txhash or a NIC's RSS hash would be, so that fq and carousel
 * skip the flow dissector (the instruction count reports both).
 *
 * Section "classifier_crowd" does as "classifier_hash" and stamps every
 * packet with one EDT time: the start of the second period of
 * 2^CROWD_SHIFT ns after the one the packet is sent in, so that every
 * packet sent within one period waits for the same instant (the instruction count's worst
 * single dequeue, insnbench-guest.sh).  Packets from port CROWD_FREE go
 * unstamped: pktgen's last packet, which it waits for, leaves at once.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>

#define SEC(name) __attribute__((section(name), used))

static inline unsigned short be16_to_host(unsigned short x)
{
	return (unsigned short)((x >> 8) | (x << 8));
}

/* Helpers by their numbers in enum bpf_func_id. */
static unsigned long long (*ktime_get_ns)(void) = (void *)5;	/* BPF_FUNC_ktime_get_ns */
static long (*set_hash)(struct __sk_buff *skb, unsigned int hash) = (void *)48;

#define CROWD_SHIFT	34	/* about 17.2 s (insnbench-guest.sh) */
/*
 * The port of pktgen's last packet when it cycles through ports 1..64 and
 * sends a multiple of 64: it moves the port on before every packet, its
 * first included, so the first comes from port 2 and every 64th from 1.
 */
#define CROWD_FREE	1

static inline int bench_udp_port(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);

	if ((void *)(udp + 1) > end)
		return -1;
	if (eth->h_proto != be16_to_host(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP)
		return -1;
	return be16_to_host(udp->source);
}

SEC("classifier")
int bench_prio(struct __sk_buff *skb)
{
	int port = bench_udp_port(skb);

	if (port >= 0)
		skb->priority = 0x10000 | port;
	return TC_ACT_OK;
}

/* Priority 1:<port> and a hash from the port; returns the port, or -1. */
static inline int bench_prio_and_hash(struct __sk_buff *skb)
{
	int port = bench_udp_port(skb);

	if (port >= 0) {
		skb->priority = 0x10000 | port;
		/* any well-spread nonzero value: a multiplicative hash */
		set_hash(skb, (unsigned int)port * 2654435761u | 1);
	}
	return port;
}

SEC("classifier_hash")
int bench_prio_hash(struct __sk_buff *skb)
{
	bench_prio_and_hash(skb);
	return TC_ACT_OK;
}

SEC("classifier_crowd")
int bench_prio_crowd(struct __sk_buff *skb)
{
	int port = bench_prio_and_hash(skb);

	if (port >= 0 && port != CROWD_FREE)
		skb->tstamp = ((ktime_get_ns() >> CROWD_SHIFT) + 2) <<
			      CROWD_SHIFT;
	return TC_ACT_OK;
}

char _license[] SEC("license") = "GPL";
