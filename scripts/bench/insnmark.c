// SPDX-License-Identifier: GPL-2.0
/*
 * insnmark.c - write STRING to FILE inside a counting window of the
 * insncount QEMU plugin: `xchg %bx,%bx' opens it, `xchg %cx,%cx' closes
 * it (no-ops on x86).  Run in the guest by insnbench-guest.sh:
 *
 *   insnmark /proc/net/pktgen/pgctrl start
 *
 * The write to pktgen's pgctrl returns when the run is done, so the window
 * holds the whole run (and this process's write and return, the same
 * every time).  No child process: pktgen stops a run when its writer
 * gets a signal.  STRING is written with a newline after it, as echo
 * would (pktgen's files drop their input's last byte).  Exit 0 if it all
 * was written.
 *
 *   insnmark -spin N
 *
 * spins N turns of an empty loop in a window instead, never idle, and
 * prints "ns T": the CLOCK_MONOTONIC time across the window, read just
 * outside its markers.  Under -icount shift=0 the guest's clock advances
 * one ns per instruction while the guest runs, so T against the window's
 * count checks that a guest time can be read as instructions.
 *
 *   insnmark -tcp ADDR PORT N BYTES RATE STEP
 *
 * opens N TCP connections to ADDR:PORT, connection i (from 0) with
 * SO_PRIORITY 0x10000 + i + 1 (class 1:i+1), SO_MAX_PACING_RATE
 * RATE + i * STEP bytes/s (rates apart, so that the flows do not keep
 * in step, which would let a qdisc send many on one timer) and a
 * send buffer that takes BYTES at once; then, in a window, writes BYTES
 * on each and waits until every byte is acknowledged, looking every
 * 10 ms (a sleeping guest costs no instructions) at the first connection
 * not yet done, for at most 300 s of guest time.  The connections are set
 * up before the window and reset after it, so that no timer of theirs
 * runs in a later window.  Prints "segs S": the data segments the
 * connections sent in all (TCP_INFO's tcpi_data_segs_out, retransmits
 * included; the handshake and the resets are not data).  The receiver is
 * the test's: a listener that never reads.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <limits.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_MAX_PACING_RATE
#define SO_MAX_PACING_RATE 47
#endif

static inline void mark_open(void)
{
	__asm__ __volatile__("xchg %%bx, %%bx" ::: "memory");
}

static inline void mark_close(void)
{
	__asm__ __volatile__("xchg %%cx, %%cx" ::: "memory");
}

static int tcp_flows(char **argv)
{
	unsigned long n = strtoul(argv[2], NULL, 0), i, done = 0, naps = 0;
	unsigned long bytes = strtoul(argv[3], NULL, 0), segs = 0;
	unsigned int rate = strtoul(argv[4], NULL, 0);
	unsigned int step = strtoul(argv[5], NULL, 0);
	struct linger reset = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct timespec nap = { 0, 10000000 };
	struct tcp_info ti;
	socklen_t tl;
	int sndbuf, *fd;
	char *buf;
	int left;

	sa.sin_port = htons(strtoul(argv[1], NULL, 0));
	if (inet_pton(AF_INET, argv[0], &sa.sin_addr) != 1 || !n || !bytes ||
	    bytes > INT_MAX / 8) {
		fprintf(stderr, "insnmark: -tcp ADDR PORT N BYTES RATE STEP\n");
		return 2;
	}
	sndbuf = 4 * bytes + (1 << 20);
	fd = calloc(n, sizeof(*fd));
	buf = calloc(1, bytes);
	if (!fd || !buf)
		return 1;
	for (i = 0; i < n; i++) {
		unsigned int pace = rate + i * step;
		int prio = 0x10000 + i + 1;

		fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fd[i] < 0 ||
		    setsockopt(fd[i], SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio)) ||
		    setsockopt(fd[i], SOL_SOCKET, SO_MAX_PACING_RATE, &pace, sizeof(pace)) ||
		    setsockopt(fd[i], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) ||
		    setsockopt(fd[i], SOL_SOCKET, SO_LINGER, &reset, sizeof(reset)) ||
		    connect(fd[i], (struct sockaddr *)&sa, sizeof(sa))) {
			perror("insnmark: tcp connection");
			return 1;
		}
	}
	mark_open();
	for (i = 0; i < n; i++)
		if (send(fd[i], buf, bytes, 0) != (ssize_t)bytes)
			break;
	for (done = 0; i == n && done < n && naps < 30000;) {
		if (ioctl(fd[done], SIOCOUTQ, &left) || left < 0)
			break;
		if (!left) {
			done++;
		} else {
			nanosleep(&nap, NULL);
			naps++;
		}
	}
	mark_close();
	if (i != n) {
		perror("insnmark: tcp send");
		return 1;
	}
	if (done != n) {
		fprintf(stderr, "insnmark: tcp: connection %lu not acknowledged in 300 s\n",
			done);
		return 1;
	}
	for (i = 0; i < n; i++) {
		tl = sizeof(ti);
		if (getsockopt(fd[i], IPPROTO_TCP, TCP_INFO, &ti, &tl) ||
		    tl < offsetof(struct tcp_info, tcpi_data_segs_out) + 4) {
			perror("insnmark: TCP_INFO");
			return 1;
		}
		segs += ti.tcpi_data_segs_out;
		close(fd[i]);
	}
	printf("segs %lu\n", segs);
	return 0;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	char buf[256];
	size_t len;
	ssize_t n;
	int fd;

	if (argc == 3 && !strcmp(argv[1], "-spin")) {
		unsigned long turns = strtoul(argv[2], NULL, 0), i;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		mark_open();
		for (i = 0; i < turns; i++)
			__asm__ __volatile__("" ::: "memory");
		mark_close();
		clock_gettime(CLOCK_MONOTONIC, &t1);
		printf("ns %lld\n", (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL +
		       t1.tv_nsec - t0.tv_nsec);
		return 0;
	}
	if (argc == 8 && !strcmp(argv[1], "-tcp"))
		return tcp_flows(argv + 2);
	if (argc != 3) {
		fprintf(stderr, "usage: insnmark FILE STRING | -spin N | -tcp ADDR PORT N BYTES RATE STEP\n");
		return 2;
	}
	len = strlen(argv[2]);
	if (len + 1 >= sizeof(buf)) {
		fprintf(stderr, "insnmark: STRING too long\n");
		return 2;
	}
	memcpy(buf, argv[2], len);
	buf[len++] = '\n';
	fd = open(argv[1], O_WRONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	mark_open();
	n = write(fd, buf, len);
	mark_close();
	if (n != (ssize_t)len) {
		perror("write");
		return 1;
	}
	return close(fd) ? 1 : 0;
}
