// SPDX-License-Identifier: GPL-2.0
/*
 * carousel-cgroup: per-cgroup (v2) classes for sch_carousel.
 *
 *   carousel-cgroup attach DEV
 *   carousel-cgroup set DEV CGROUP_PATH CLASSID
 *   carousel-cgroup del DEV CGROUP_PATH|CGROUP_ID
 *   carousel-cgroup prune DEV
 *   carousel-cgroup list DEV
 *   carousel-cgroup detach DEV
 *
 * attach loads the classifier of carousel_cgroup.bpf.c (embedded in this
 * binary) and adds it as a cls_bpf filter, direct-action, to DEV's carousel
 * root qdisc (prio CG_PRIO, handle CG_HANDLE, classid MAJOR:0: the program
 * sets the minor).  Nothing is pinned.  The filter holds the program and
 * the program holds its maps, so every other command finds the map the
 * kernel really uses by asking for the filter, then for its program's map
 * ids.  What the tool reports is therefore what classifies: when the qdisc
 * is replaced or the device deleted, the filter, program and maps go with
 * it, and the next set says "not attached".  With no path in bpffs there is
 * nothing a local user can plant, nothing to leak, and nothing that differs
 * between "ip netns exec" and "nsenter --net": the filter belongs to the
 * device, in whichever network namespace the command runs.
 *
 * Every command holds one lock (LOCK_PATH, root's own file in a root-owned
 * directory) from its first check to its last change, so that two runs
 * never interleave their check-then-act; attach's filter is created with
 * NLM_F_EXCL besides, so a run that ignores the lock still cannot replace
 * another's.  Every change to the map is followed by a bump of the
 * classifier's cache generation (see carousel_cgroup.bpf.c).
 *
 * Every command checks everything before it changes anything: an error
 * prints one line on stderr, exits 1 and leaves the state as it was.
 * Usage errors (including a malformed classid or cgroup id) exit 2.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/magic.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "include/uapi/carousel.h"

#define CG_PRIO		0xca00	/* our filter's priority on the qdisc */
#define CG_HANDLE	0xca	/* and its handle */
#define PROG_NAME	"carousel_cgroup"
#define MAP_NAME	"cgroup_class"
#define GEN_NAME	"cgroup_gen"
#define CG_MAX_LEVEL	64	/* keep in step with carousel_cgroup.bpf.c */
#define LOCK_DIR	"/run"
#define LOCK_NAME	"carousel-cgroup.lock"
#define LOCK_WAIT_S	10
/*
 * A cgroup v2 file handle is the kernfs node id, 8 bytes, of type
 * FILEID_KERNFS (include/linux/exportfs.h, not exported to userspace);
 * the same 64-bit id is what bpf_skb_cgroup_id() returns.
 */
#define CG_FILEID_KERNFS	0xfe

/* The BPF object, built from carousel_cgroup.bpf.c (see tc/Makefile). */
__asm__(".pushsection .rodata\n"
	".balign 8\n"
	"carousel_bpf_obj:\n"
	".incbin \"" CAROUSEL_BPF_OBJ "\"\n"
	"carousel_bpf_obj_end:\n"
	".popsection\n");
extern const char carousel_bpf_obj[], carousel_bpf_obj_end[];

static const char *dev;

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("carousel-cgroup: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void __attribute__((noreturn)) usage(void)
{
	fputs("usage: carousel-cgroup attach DEV\n"
	      "       carousel-cgroup set DEV CGROUP_PATH CLASSID\n"
	      "       carousel-cgroup del DEV CGROUP_PATH|CGROUP_ID\n"
	      "       carousel-cgroup prune DEV\n"
	      "       carousel-cgroup list DEV\n"
	      "       carousel-cgroup detach DEV\n", stderr);
	exit(2);
}

static void __attribute__((noreturn)) usage_error(const char *fmt, const char *arg)
{
	fputs("carousel-cgroup: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	if (level == LIBBPF_WARN && getenv("CAROUSEL_CGROUP_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* ---- rtnetlink: the root qdisc and the classes of DEV ------------------- */

struct tc_obj {
	__u32 handle;
	__u32 parent;
	char kind[32];
	__u64 rate;		/* class rate, bytes/s */
	bool has_rate;
};

/* nl_attr: append an attribute to N (of room MAX); returns it. */
static struct rtattr *nl_attr(struct nlmsghdr *n, size_t max, int type,
			      const void *data, size_t len)
{
	struct rtattr *a = (struct rtattr *)((char *)n + NLMSG_ALIGN(n->nlmsg_len));

	if (NLMSG_ALIGN(n->nlmsg_len) + RTA_SPACE(len) > max)
		die("netlink message too long");
	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(a), data, len);
	n->nlmsg_len = NLMSG_ALIGN(n->nlmsg_len) + RTA_ALIGN(a->rta_len);
	return a;
}

typedef bool (*tc_obj_cb)(const struct tc_obj *o, void *arg);

static void parse_class_opts(struct rtattr *nest, struct tc_obj *o)
{
	int len = RTA_PAYLOAD(nest);
	struct rtattr *a;

	for (a = RTA_DATA(nest); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if ((a->rta_type & NLA_TYPE_MASK) == TCA_CAROUSEL_CLASS_RATE &&
		    RTA_PAYLOAD(a) >= sizeof(__u64)) {
			memcpy(&o->rate, RTA_DATA(a), sizeof(__u64));
			o->has_rate = true;
		}
	}
}

/*
 * tc_dump: dump DEV's qdiscs (RTM_GETQDISC) or classes (RTM_GETTCLASS) and
 * call cb for each one until it returns true.  Returns whether it did.
 */
static bool tc_dump(int type, int ifindex, tc_obj_cb cb, void *arg)
{
	struct {
		struct nlmsghdr n;
		struct tcmsg t;
	} req = {
		.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)),
		.n.nlmsg_type = type,
		.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		.n.nlmsg_seq = 1,
		.t.tcm_family = AF_UNSPEC,
		.t.tcm_ifindex = ifindex,
	};
	static char buf[65536];
	bool found = false, done = false;
	int fd, len;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		die("netlink socket: %s", strerror(errno));
	if (send(fd, &req, req.n.nlmsg_len, 0) < 0)
		die("netlink send: %s", strerror(errno));
	while (!done) {
		struct nlmsghdr *h;

		len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0)
			die("netlink recv: %s", strerror(errno));
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned int)len);
		     h = NLMSG_NEXT(h, len)) {
			struct tcmsg *t = NLMSG_DATA(h);
			struct tc_obj o = { 0 };
			struct rtattr *a;
			int alen;

			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				die("netlink dump on %s: %s", dev, strerror(-e->error));
			}
			if (found || h->nlmsg_type != (type == RTM_GETQDISC ?
						       RTM_NEWQDISC : RTM_NEWTCLASS))
				continue;
			if (t->tcm_ifindex != ifindex)
				continue;
			o.handle = t->tcm_handle;
			o.parent = t->tcm_parent;
			alen = h->nlmsg_len - NLMSG_LENGTH(sizeof(*t));
			for (a = (struct rtattr *)((char *)t + NLMSG_ALIGN(sizeof(*t)));
			     RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				if (a->rta_type == TCA_KIND)
					snprintf(o.kind, sizeof(o.kind), "%s",
						 (char *)RTA_DATA(a));
				else if (a->rta_type == TCA_OPTIONS &&
					 type == RTM_GETTCLASS)
					parse_class_opts(a, &o);
			}
			if (cb(&o, arg))
				found = true;
		}
	}
	close(fd);
	return found;
}

static bool is_root(const struct tc_obj *o, void *arg)
{
	if (o->parent != TC_H_ROOT)
		return false;
	*(struct tc_obj *)arg = *o;
	return true;
}

/* root_major: the handle (major:0) of DEV's root qdisc if it is carousel. */
static bool root_major(int ifindex, __u32 *major)
{
	struct tc_obj root = { 0 };

	if (!tc_dump(RTM_GETQDISC, ifindex, is_root, &root) ||
	    strcmp(root.kind, "carousel"))
		return false;
	*major = root.handle;
	return true;
}

static bool is_class(const struct tc_obj *o, void *arg)
{
	struct tc_obj *want = arg;

	if (o->handle != want->handle || strcmp(o->kind, "carousel"))
		return false;
	*want = *o;
	return true;
}

/* class_get: DEV's carousel class CLASSID, if there is one. */
static bool class_get(int ifindex, __u32 classid, struct tc_obj *cl)
{
	memset(cl, 0, sizeof(*cl));
	cl->handle = classid;
	return tc_dump(RTM_GETTCLASS, ifindex, is_class, cl);
}

/*
 * nl_change: send the request N (flags get NLM_F_ACK) and wait for its
 * ack.  Returns 0 or -errno; on error, the kernel's extack message, if it
 * gave one, is in MSG (else MSG is "").
 */
static int nl_change(struct nlmsghdr *n, char *msg, size_t msglen)
{
	static char ack[8192];
	struct nlmsghdr *h = (struct nlmsghdr *)ack;
	int fd, len, one = 1, err = -EPROTO;

	*msg = 0;
	n->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* Without it the kernel keeps its reason to itself. */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (send(fd, n, n->nlmsg_len, 0) < 0) {
		err = -errno;
		goto out;
	}
	len = recv(fd, ack, sizeof(ack), 0);
	if (len < 0) {
		err = -errno;
		goto out;
	}
	if (NLMSG_OK(h, (unsigned int)len) && h->nlmsg_type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(h);
		struct rtattr *a;
		int alen;

		err = e->error;
		if (!err || !(h->nlmsg_flags & NLM_F_ACK_TLVS))
			goto out;
		/* The TLVs follow the error and, unless capped, our request. */
		a = (struct rtattr *)((char *)e + sizeof(*e) +
			((h->nlmsg_flags & NLM_F_CAPPED) ? 0 :
			 NLMSG_ALIGN(e->msg.nlmsg_len) - sizeof(e->msg)));
		alen = (char *)h + h->nlmsg_len - (char *)a;
		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen))
			if (a->rta_type == NLMSGERR_ATTR_MSG)
				snprintf(msg, msglen, "%.*s",
					 (int)RTA_PAYLOAD(a), (char *)RTA_DATA(a));
	}
out:
	close(fd);
	return err;
}

/* kerr: "strerror" or "strerror (extack)". */
static const char *kerr(int err, const char *msg)
{
	static char buf[600];

	if (*msg)
		snprintf(buf, sizeof(buf), "%s (%s)", strerror(-err), msg);
	else
		snprintf(buf, sizeof(buf), "%s", strerror(-err));
	return buf;
}

struct filter_req {
	struct nlmsghdr n;
	struct tcmsg t;
	char attrs[256];
};

static void filter_req_init(struct filter_req *r, int type, int flags,
			    int ifindex, __u32 major)
{
	memset(r, 0, sizeof(*r));
	r->n.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg));
	r->n.nlmsg_type = type;
	r->n.nlmsg_flags = flags;
	r->n.nlmsg_seq = 1;
	r->t.tcm_family = AF_UNSPEC;
	r->t.tcm_ifindex = ifindex;
	r->t.tcm_parent = major;
	r->t.tcm_handle = CG_HANDLE;
	r->t.tcm_info = TC_H_MAKE(CG_PRIO << 16, htons(ETH_P_ALL));
	nl_attr(&r->n, sizeof(*r), TCA_KIND, "bpf", 4);
}

/*
 * add_filter: our cls_bpf filter, direct-action, on DEV's qdisc MAJOR.
 * Not libbpf's bpf_tc_attach(): the filter must carry the classid MAJOR:0,
 * because the program can only set the minor (qdisc_skb_cb's tc_classid
 * has 16 bits, and cls_bpf ORs it into the filter's classid).  NLM_F_EXCL:
 * of two attaches that race, one gets EEXIST.
 */
static int add_filter(int ifindex, __u32 major, int prog_fd, char *msg,
		      size_t msglen)
{
	struct filter_req r;
	struct rtattr *nest;
	__u32 flags = TCA_BPF_FLAG_ACT_DIRECT, fd32 = prog_fd;

	filter_req_init(&r, RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL,
			ifindex, major);
	nest = nl_attr(&r.n, sizeof(r), TCA_OPTIONS, NULL, 0);
	nl_attr(&r.n, sizeof(r), TCA_BPF_FD, &fd32, sizeof(fd32));
	nl_attr(&r.n, sizeof(r), TCA_BPF_NAME, PROG_NAME, sizeof(PROG_NAME));
	nl_attr(&r.n, sizeof(r), TCA_BPF_FLAGS, &flags, sizeof(flags));
	nl_attr(&r.n, sizeof(r), TCA_BPF_CLASSID, &major, sizeof(major));
	nest->rta_len = (char *)&r + r.n.nlmsg_len - (char *)nest;
	return nl_change(&r.n, msg, msglen);
}

static int del_filter(int ifindex, __u32 major, char *msg, size_t msglen)
{
	struct filter_req r;

	filter_req_init(&r, RTM_DELTFILTER, 0, ifindex, major);
	return nl_change(&r.n, msg, msglen);
}

/* ---- checks ------------------------------------------------------------ */

static int dev_ifindex(void)
{
	int ifindex = if_nametoindex(dev);

	if (!ifindex)
		die("no device %s", dev);
	return ifindex;
}

static __u32 need_carousel(int ifindex)
{
	__u32 major;

	if (!root_major(ifindex, &major))
		die("%s has no carousel root qdisc", dev);
	return major;
}

/* safe_dir: DIR is root's, not a symlink, and only root can write to it. */
static int safe_dir(const char *dir)
{
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		die("cannot open %s: %s", dir, strerror(errno));
	if (fstat(fd, &st))
		die("stat %s: %s", dir, strerror(errno));
	if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)))
		die("%s is not root's own directory (owner %u, mode %04o): refusing to keep a lock there",
		    dir, st.st_uid, st.st_mode & 07777);
	return fd;
}

/*
 * lock: one lock for every run on this host, held until exit.  The file is
 * root's, 0600, in a directory only root can write to, and opened without
 * following a symlink, so no other user can hold, replace or redirect it.
 */
static void lock(void)
{
	int dfd = safe_dir(LOCK_DIR), fd, i;
	struct stat st;

	fd = openat(dfd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0)
		die("cannot open " LOCK_DIR "/" LOCK_NAME ": %s", strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 077) || st.st_nlink != 1)
		die(LOCK_DIR "/" LOCK_NAME " is not a plain file of root's with mode 0600: remove it");
	for (i = 0; flock(fd, LOCK_EX | LOCK_NB); i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (errno != EWOULDBLOCK)
			die("cannot lock " LOCK_DIR "/" LOCK_NAME ": %s", strerror(errno));
		if (i >= LOCK_WAIT_S * 100)
			die("another carousel-cgroup has held " LOCK_DIR "/" LOCK_NAME
			    " for %d s", LOCK_WAIT_S);
		nanosleep(&ts, NULL);
	}
	close(dfd);	/* fd stays open, and locked, until exit */
}

/* ---- the filter, its program and its maps ------------------------------- */

struct attached {
	__u32 major;
	__u32 prog_id;
	int map_fd;		/* cgroup_class */
	int gen_fd;		/* cgroup_gen */
	__u32 map_id;
	__u32 max_entries;
};

/* open_ours: open map ID if it is the map NAME with the given sizes. */
static int open_ours(__u32 id, const char *name, __u32 type, __u32 key,
		     __u32 value, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);
	int fd = bpf_map_get_fd_by_id(id);

	if (fd < 0)
		die("cannot open map id %u of %s's filter: %s", id, dev, strerror(errno));
	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len))
		die("cannot read map id %u: %s", id, strerror(errno));
	if (strcmp(info->name, name) || info->type != type ||
	    info->key_size != key || info->value_size != value) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * find_filter: whether DEV's carousel qdisc MAJOR has a filter at our prio
 * and handle; if so, whether it is ours (its program is PROG_NAME, with our
 * two maps), filling A.  A filter of someone else's there is an error.
 */
static bool find_filter(int ifindex, __u32 major, struct attached *a,
			bool need_maps)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_CUSTOM, .parent = major);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, q, .handle = CG_HANDLE,
			    .priority = CG_PRIO);
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info), ids[8], i;
	int fd, err;

	memset(a, 0, sizeof(*a));
	a->major = major;
	a->map_fd = a->gen_fd = -1;
	err = bpf_tc_query(&hook, &q);
	if (err == -ENOENT)
		return false;
	if (err == -EINVAL)	/* no such prio, or a filter that is not bpf */
		return false;
	if (err)
		die("cannot query the filters of %s: %s", dev, strerror(-err));
	a->prog_id = q.prog_id;
	fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (fd < 0)
		die("cannot open program id %u of %s's filter: %s", q.prog_id,
		    dev, strerror(errno));
	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		die("cannot read program id %u: %s", q.prog_id, strerror(errno));
	close(fd);
	if (strcmp(info.name, PROG_NAME))
		die("%s's filter prio 0x%x handle 0x%x on %x: runs program \"%s\", not carousel-cgroup's",
		    dev, CG_PRIO, CG_HANDLE, major >> 16, info.name);
	for (i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct bpf_map_info mi;
		int m;

		if (a->map_fd < 0 &&
		    (m = open_ours(ids[i], MAP_NAME, BPF_MAP_TYPE_HASH,
				   sizeof(__u64), sizeof(__u32), &mi)) >= 0) {
			a->map_fd = m;
			a->map_id = mi.id;
			a->max_entries = mi.max_entries;
		} else if (a->gen_fd < 0 &&
			   (m = open_ours(ids[i], GEN_NAME, BPF_MAP_TYPE_ARRAY,
					  sizeof(__u32), sizeof(__u64), &mi)) >= 0) {
			a->gen_fd = m;
		}
	}
	if (need_maps && (a->map_fd < 0 || a->gen_fd < 0))
		die("%s's filter runs a program named " PROG_NAME
		    " without this version's maps: carousel-cgroup detach %s, then attach",
		    dev, dev);
	return true;
}

/*
 * need_attached: the maps of DEV's filter, or an error if there is none.
 * Without NEED_MAPS (detach), a filter of an earlier version, whose
 * program has the same name but other maps, will do.
 */
static void need_attached(int ifindex, struct attached *a, bool need_maps)
{
	__u32 major = need_carousel(ifindex);

	if (!find_filter(ifindex, major, a, need_maps))
		die("%s is not attached (no carousel-cgroup filter on its carousel qdisc %x:): run carousel-cgroup attach %s",
		    dev, major >> 16, dev);
}

/*
 * A change to the map and the bump that follows it are one step: the
 * signals a user or a supervisor sends (not SIGKILL) wait until both are
 * done, so an interrupted run cannot leave the cache stale.
 */
static sigset_t change_old;

static void change_begin(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &set, &change_old);
}

/* bump: tell the classifier's cache that the map changed. */
static void bump(const struct attached *a)
{
	__u32 zero = 0;
	__u64 gen = 0;

	if (bpf_map_lookup_elem(a->gen_fd, &zero, &gen))
		die("cannot read the cache generation: %s", strerror(errno));
	gen++;
	if (bpf_map_update_elem(a->gen_fd, &zero, &gen, BPF_ANY))
		die("cannot bump the cache generation: %s", strerror(errno));
}

/*
 * change_end: bump the generation, then make sure the map that was
 * changed is still the one DEV's filter uses: tc does not take our lock,
 * and a qdisc replaced meanwhile took the filter with it.
 */
static void change_end(int ifindex, const struct attached *a)
{
	struct attached now;
	__u32 major;

	bump(a);
	if (!root_major(ifindex, &major) || major != a->major ||
	    !find_filter(ifindex, major, &now, true) ||
	    now.prog_id != a->prog_id || now.map_id != a->map_id)
		die("%s's filter went away while this ran (qdisc replaced?): the change reached no classifier; attach and run it again",
		    dev);
	sigprocmask(SIG_SETMASK, &change_old, NULL);
}

/* ---- cgroups ------------------------------------------------------------ */

/* unescape_mountinfo: mountinfo writes ' ', '\t', '\n' and '\\' as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = 0;
}

/*
 * Where cgroup v2 is mounted.  Normally in this process's own mount
 * namespace.  Under "ip netns exec" there is none: it mounts a new sysfs
 * over /sys, and /sys/fs/cgroup goes with the old one.  Then the paths a
 * user gives are reached through /proc/1/root, where they mean what they
 * mean outside.  (Not by mounting cgroup2 again: in the initial cgroup
 * namespace a mount applies its options, nsdelegate, memory_recursiveprot
 * and the like, to the one hierarchy, for the whole host.)
 */
static struct {
	bool found;
	char via[16];		/* "" or "/proc/1/root": the prefix to reach it */
	char info[32];		/* the mountinfo it was found in */
	char mnt[PATH_MAX];	/* its mount point */
} cg2;

/*
 * mountinfo_find: in the mountinfo file INFO, the first cgroup2 mount, or
 * with MNT_ID >= 0 that mount; its mount point in MNT and its root within
 * the hierarchy in ROOT (both may be NULL).
 */
static bool mountinfo_find(const char *info, int mnt_id, char *mnt, char *root)
{
	char line[8192];
	FILE *f = fopen(info, "re");
	bool found = false;

	if (!f)
		return false;
	/* "id parent maj:min root mountpoint opts [tags] - fstype src opts" */
	while (!found && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - "), *fld[5], *save = NULL;
		int i;

		if (!sep || strncmp(sep, " - cgroup2 ", 11))
			continue;
		for (i = 0; i < 5; i++) {
			fld[i] = strtok_r(i ? NULL : line, " ", &save);
			if (!fld[i])
				break;
		}
		if (i < 5 || (mnt_id >= 0 && atoi(fld[0]) != mnt_id))
			continue;
		unescape_mountinfo(fld[3]);
		unescape_mountinfo(fld[4]);
		if (mnt)
			snprintf(mnt, PATH_MAX, "%s", fld[4]);
		if (root)
			snprintf(root, PATH_MAX, "%s", fld[3]);
		found = true;
	}
	fclose(f);
	return found;
}

static bool cgroup2_find(void)
{
	if (cg2.found)
		return true;
	if (mountinfo_find("/proc/self/mountinfo", -1, cg2.mnt, NULL)) {
		snprintf(cg2.info, sizeof(cg2.info), "/proc/self/mountinfo");
	} else if (mountinfo_find("/proc/1/mountinfo", -1, cg2.mnt, NULL)) {
		snprintf(cg2.info, sizeof(cg2.info), "/proc/1/mountinfo");
		snprintf(cg2.via, sizeof(cg2.via), "/proc/1/root");
	} else {
		return false;
	}
	cg2.found = true;
	return true;
}

/* depth: how many components PATH has ("/" 0, "/a/b" 2). */
static int depth(const char *path)
{
	int n = 0;

	for (; *path; path++)
		if (*path != '/' && (path[1] == '/' || !path[1]))
			n++;
	return n;
}

/*
 * cgroup_id: the id of the cgroup v2 directory PATH, as BPF sees it, and
 * how many levels below the root cgroup it is (-1: cannot tell).  PATH is
 * opened once; everything is read from that one open file.
 */
static __u64 cgroup_id(const char *path, int *level)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = { .fh.handle_bytes = sizeof(__u64) };
	char real[PATH_MAX + 16], lnk[64], at[PATH_MAX], mnt[PATH_MAX], root[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	size_t ml;
	ssize_t n;
	int fd, mnt_id;

	cgroup2_find();
	snprintf(real, sizeof(real), "%s%s", *path == '/' ? cg2.via : "", path);
	fd = open(real, O_PATH | O_CLOEXEC);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	if (fstatfs(fd, &sfs) || fstat(fd, &st))
		die("%s: %s", path, strerror(errno));
	if (sfs.f_type == CGROUP_SUPER_MAGIC)
		die("%s is a cgroup v1 directory: use net_cls.classid and a tc cgroup filter",
		    path);
	if (sfs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
		die("%s is not a cgroup v2 directory", path);
	if (name_to_handle_at(fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH))
		die("%s: cannot read its cgroup id: %s", path, strerror(errno));
	if (h.fh.handle_type != CG_FILEID_KERNFS || h.fh.handle_bytes != sizeof(__u64))
		die("%s: unexpected file handle (type 0x%x, %u bytes)", path,
		    h.fh.handle_type, h.fh.handle_bytes);
	/* Its level: the mount's root in the hierarchy, then below the mount. */
	*level = -1;
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
	n = readlink(lnk, at, sizeof(at) - 1);
	if (n > 0 && cg2.found &&
	    mountinfo_find(cg2.info, mnt_id, mnt, root)) {
		at[n] = 0;
		ml = strlen(mnt);
		if (!strcmp(mnt, "/"))
			ml = 0;
		if (!strncmp(at, mnt, ml) && (!at[ml] || at[ml] == '/'))
			*level = depth(root) + depth(at + ml);
	}
	close(fd);
	return h.id;
}

/*
 * cg_open: open the cgroup with id ID under the cgroup2 mount MFD.
 * Returns the fd, -ESTALE if no such cgroup exists any more, or -errno.
 */
static int cg_open(int mfd, __u64 id)
{
	struct {
		struct file_handle fh;
		__u64 id;
	} h = {
		.fh.handle_bytes = sizeof(__u64),
		.fh.handle_type = CG_FILEID_KERNFS,
		.id = id,
	};
	int fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/*
	 * kernfs says ESTALE for an id it does not know, and also when it
	 * could not get an inode for one it does (out of memory): ask twice
	 * before calling a cgroup gone.
	 */
	if (fd < 0 && errno == ESTALE)
		fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* ---- parsing, before anything is looked at ------------------------------ */

/* parse_classid: "MAJOR:MINOR" in hex, as tc writes it. */
static __u32 parse_classid(const char *arg)
{
	unsigned long maj, min;
	const char *s = arg;
	char *end;

	if (!isxdigit((unsigned char)*s))
		goto bad;
	maj = strtoul(s, &end, 16);
	if (end == s || *end != ':' || !isxdigit((unsigned char)end[1]))
		goto bad;
	s = end + 1;
	min = strtoul(s, &end, 16);
	if (end == s || *end || maj > 0xffff || min > 0xffff || !min)
		goto bad;
	return TC_H_MAKE(maj << 16, min);
bad:
	usage_error("bad classid \"%s\" (want MAJOR:MINOR in hex, e.g. 1:10)", arg);
}

/* parse_id: a decimal cgroup id, if ARG is all digits. */
static bool parse_id(const char *arg, __u64 *id)
{
	const char *p;
	char *end;

	for (p = arg; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	if (p == arg)
		return false;
	errno = 0;
	*id = strtoull(arg, &end, 10);
	if (errno || *end || !*id)
		usage_error("bad cgroup id \"%s\"", arg);
	return true;
}

/* ---- output ------------------------------------------------------------- */

static void sprint_rate(char *buf, size_t len, __u64 bytes_per_s)
{
	static const char *const unit[] = { "bit", "Kbit", "Mbit", "Gbit", "Tbit" };
	double r = bytes_per_s * 8.0;
	int i = 0;

	while (i < 4 && r >= 1000.0) {
		r /= 1000.0;
		i++;
	}
	snprintf(buf, len, "%.6g%s", r, unit[i]);
}

/*
 * put_escaped: S with every byte outside '!'..'~' (space, control
 * characters, DEL, bytes of UTF-8) and the backslash written as \xHH, so a
 * cgroup's name can neither split a line into fields nor reach the
 * terminal as an escape sequence.
 */
static void put_escaped(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c > ' ' && c < 0x7f && c != '\\')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
}

/* ---- commands ---------------------------------------------------------- */

static int cmd_attach(void)
{
	int ifindex = dev_ifindex(), err;
	__u32 major = need_carousel(ifindex);
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct attached a;
	char msg[512];

	if (find_filter(ifindex, major, &a, false))
		die("%s is already attached (program id %u, map id %u)", dev,
		    a.prog_id, a.map_id);
	obj = bpf_object__open_mem(carousel_bpf_obj,
				   carousel_bpf_obj_end - carousel_bpf_obj, NULL);
	if (!obj)
		die("cannot open the BPF object: %s", strerror(errno));
	prog = bpf_object__find_program_by_name(obj, PROG_NAME);
	if (!prog)
		die("the BPF object has no program " PROG_NAME);
	err = bpf_object__load(obj);
	if (err)
		die("cannot load the BPF classifier: %s (CAROUSEL_CGROUP_DEBUG=1 for details)",
		    strerror(-err));
	err = add_filter(ifindex, major, bpf_program__fd(prog), msg, sizeof(msg));
	/* The filter holds the program, the program its maps; ours go. */
	bpf_object__close(obj);
	if (err == -EEXIST)
		die("%s is already attached (another run attached it meanwhile)", dev);
	if (err)
		die("cannot add the tc filter on %s: %s", dev, kerr(err, msg));
	return 0;
}

static int cmd_detach(void)
{
	int ifindex = dev_ifindex(), err;
	struct attached a;
	char msg[512];

	need_attached(ifindex, &a, false);
	err = del_filter(ifindex, a.major, msg, sizeof(msg));
	if (err)
		die("cannot delete the tc filter on %s: %s", dev, kerr(err, msg));
	return 0;
}

static int cmd_set(const char *cg, __u32 classid)
{
	int ifindex = dev_ifindex(), level;
	struct attached a;
	struct tc_obj cl;
	__u64 id;

	need_attached(ifindex, &a, true);
	id = cgroup_id(cg, &level);
	if (level < 0)
		die("%s: cannot tell how deep it is (no cgroup2 mount of it in %s)",
		    cg, cg2.found ? cg2.info : "/proc/self/mountinfo");
	if (level > CG_MAX_LEVEL)
		die("%s is %d levels below the root cgroup; the classifier looks %d deep: map an ancestor",
		    cg, level, CG_MAX_LEVEL);
	if (TC_H_MAJ(classid) != a.major)
		die("classid %x:%x is not on %s's carousel qdisc %x:",
		    TC_H_MAJ(classid) >> 16, TC_H_MIN(classid), dev, a.major >> 16);
	if (!class_get(ifindex, classid, &cl))
		die("no class %x:%x on %s", TC_H_MAJ(classid) >> 16,
		    TC_H_MIN(classid), dev);
	change_begin();
	if (bpf_map_update_elem(a.map_fd, &id, &classid, BPF_ANY)) {
		if (errno == E2BIG)
			die("cannot map %s: the map is full (%u of %u entries): carousel-cgroup prune %s, or del",
			    cg, a.max_entries, a.max_entries, dev);
		die("cannot map %s to %x:%x: %s", cg, TC_H_MAJ(classid) >> 16,
		    TC_H_MIN(classid), strerror(errno));
	}
	change_end(ifindex, &a);
	return 0;
}

static int cmd_del(const char *arg)
{
	int ifindex = dev_ifindex(), level;
	struct attached a;
	__u64 id;
	bool by_id = parse_id(arg, &id);

	need_attached(ifindex, &a, true);
	if (!by_id)
		id = cgroup_id(arg, &level);
	change_begin();
	if (bpf_map_delete_elem(a.map_fd, &id)) {
		if (errno == ENOENT)
			die("%s has no class on %s", arg, dev);
		die("cannot delete %s's mapping on %s: %s", arg, dev, strerror(errno));
	}
	change_end(ifindex, &a);
	return 0;
}

/* The map's entries, read in one pass. */
static struct entry {
	__u64 id;
	__u32 classid;
	char *path;		/* NULL: the cgroup is gone */
} *ent;
static unsigned int nent;

static void read_map(const struct attached *a)
{
	__u64 key, next, *prev = NULL;

	ent = calloc(a->max_entries + 1, sizeof(*ent));
	if (!ent)
		die("out of memory");
	while (nent <= a->max_entries &&
	       !bpf_map_get_next_key(a->map_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(a->map_fd, &key, &ent[nent].classid))
			continue;	/* deleted meanwhile */
		ent[nent++].id = key;
	}
}

/*
 * find_paths: each entry's path, from its id.  Returns false, with the
 * reason in ERR, if that cannot be told (then no entry may be called gone).
 */
static bool find_paths(int *err)
{
	char mnt[PATH_MAX + 16], lnk[64], path[PATH_MAX];
	unsigned int i;
	int mfd;

	*err = 0;
	if (!cgroup2_find()) {
		*err = ENOENT;
		return false;
	}
	snprintf(mnt, sizeof(mnt), "%s%s", cg2.via, cg2.mnt);
	mfd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0) {
		*err = errno;
		return false;
	}
	for (i = 0; i < nent; i++) {
		int fd = cg_open(mfd, ent[i].id);
		ssize_t n;

		if (fd == -ESTALE)
			continue;
		if (fd < 0) {
			*err = -fd;
			close(mfd);
			return false;
		}
		snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
		n = readlink(lnk, path, sizeof(path) - 1);
		close(fd);
		if (n < 0) {
			*err = errno;
			close(mfd);
			return false;
		}
		path[n] = 0;
		ent[i].path = strdup(path);
	}
	close(mfd);
	return true;
}

static int cmd_prune(void)
{
	int ifindex = dev_ifindex(), err;
	unsigned int i, gone = 0;
	struct attached a;

	need_attached(ifindex, &a, true);
	read_map(&a);
	if (!find_paths(&err))
		die("cannot tell which cgroups still exist: %s; nothing pruned",
		    strerror(err));
	change_begin();
	for (i = 0; i < nent; i++) {
		if (ent[i].path)
			continue;
		if (bpf_map_delete_elem(a.map_fd, &ent[i].id) && errno != ENOENT) {
			err = errno;
			bump(&a);
			die("cannot delete cgroup id %llu: %s (%u pruned before it)",
			    (unsigned long long)ent[i].id, strerror(err), gone);
		}
		gone++;
	}
	change_end(ifindex, &a);
	printf("pruned %u of %u entries (cgroups that no longer exist)\n",
	       gone, nent);
	return 0;
}

static int cmp_path(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (!x->path || !y->path)
		return !x->path - !y->path;
	return strcmp(x->path, y->path);
}

static int cmd_list(void)
{
	int ifindex = dev_ifindex(), err;
	struct attached a;
	unsigned int i;
	bool paths;

	need_attached(ifindex, &a, true);
	read_map(&a);
	paths = find_paths(&err);
	qsort(ent, nent, sizeof(ent[0]), cmp_path);
	printf("# %s: filter prio 0x%x handle 0x%x on carousel %x:, program %u, map %u: %u of %u entries\n",
	       dev, CG_PRIO, CG_HANDLE, a.major >> 16, a.prog_id, a.map_id,
	       nent, a.max_entries);
	if (!paths)
		printf("# cgroup paths unknown: %s\n", strerror(err));
	for (i = 0; i < nent; i++) {
		struct tc_obj cl;
		char rate[32] = "no-such-class";

		if (class_get(ifindex, ent[i].classid, &cl) && cl.has_rate)
			sprint_rate(rate, sizeof(rate), cl.rate);
		if (ent[i].path)
			put_escaped(ent[i].path);
		else
			fputs(paths ? "(deleted)" : "(unknown)", stdout);
		printf(" %llu %x:%x %s\n", (unsigned long long)ent[i].id,
		       TC_H_MAJ(ent[i].classid) >> 16,
		       TC_H_MIN(ent[i].classid), rate);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;
	__u32 classid = 0;

	if (argc < 3)
		usage();
	cmd = argv[1];
	dev = argv[2];
	/* Every usage error, malformed values included, before any check. */
	if (!((!strcmp(cmd, "attach") && argc == 3) ||
	      (!strcmp(cmd, "detach") && argc == 3) ||
	      (!strcmp(cmd, "set") && argc == 5) ||
	      (!strcmp(cmd, "del") && argc == 4) ||
	      (!strcmp(cmd, "prune") && argc == 3) ||
	      (!strcmp(cmd, "list") && argc == 3)))
		usage();
	if (!*dev || strlen(dev) >= IF_NAMESIZE)
		usage_error("bad device name \"%s\"", dev);
	if (!strcmp(cmd, "set"))
		classid = parse_classid(argv[4]);
	if (!strcmp(cmd, "del")) {
		__u64 id;

		parse_id(argv[3], &id);
	}
	if (geteuid() != 0)
		die("must run as root (it loads BPF and changes tc filters)");
	libbpf_set_print(libbpf_quiet);
	lock();
	if (!strcmp(cmd, "attach"))
		return cmd_attach();
	if (!strcmp(cmd, "detach"))
		return cmd_detach();
	if (!strcmp(cmd, "set"))
		return cmd_set(argv[3], classid);
	if (!strcmp(cmd, "del"))
		return cmd_del(argv[3]);
	if (!strcmp(cmd, "prune"))
		return cmd_prune();
	return cmd_list();
}
