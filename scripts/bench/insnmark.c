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
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline void mark_open(void)
{
	__asm__ __volatile__("xchg %%bx, %%bx" ::: "memory");
}

static inline void mark_close(void)
{
	__asm__ __volatile__("xchg %%cx, %%cx" ::: "memory");
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
	if (argc != 3) {
		fprintf(stderr, "usage: insnmark FILE STRING | -spin N\n");
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
