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
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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
	char buf[256];
	size_t len;
	ssize_t n;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: insnmark FILE STRING\n");
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
