// SPDX-License-Identifier: GPL-2.0
/*
 * carousel-cgroup: per-cgroup (v2) classes for sch_carousel.
 *
 *   carousel-cgroup attach DEV
 *   carousel-cgroup set DEV CGROUP_PATH CLASSID
 *   carousel-cgroup del DEV CGROUP_PATH
 *   carousel-cgroup list DEV
 *   carousel-cgroup detach DEV
 *
 * attach loads the classifier of carousel_cgroup.bpf.c (embedded in this
 * binary) and adds it as a cls_bpf filter, direct-action, to DEV's carousel
 * root qdisc (prio CG_PRIO, handle CG_HANDLE, classid MAJOR:0: the program
 * sets the minor).  Its map, cgroup id ->
 * classid, is pinned at /sys/fs/bpf/carousel/<ifindex>/map (in a network
 * namespace other than the initial one: <ifindex>-ns<netns inode>), where
 * set, del and list find it.  detach removes the filter and the pin, and
 * with them the program and the map.
 *
 * Every command checks everything before it changes anything: an error
 * prints one line on stderr, exits 1 and leaves the state as it was.
 * Usage errors exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

#include "sch_carousel.h"

#define BPFFS		"/sys/fs/bpf"
#define PIN_ROOT	BPFFS "/carousel"
#define CG_PRIO		0xca00	/* our filter's priority on the qdisc */
#define CG_HANDLE	0xca	/* and its handle */
#define PROG_NAME	"carousel_cgroup"
#define MAP_NAME	"cgroup_class"
#define MAX_ENTRIES	4096

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
	      "       carousel-cgroup del DEV CGROUP_PATH\n"
	      "       carousel-cgroup list DEV\n"
	      "       carousel-cgroup detach DEV\n", stderr);
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
 * add_filter: our cls_bpf filter, direct-action, on DEV's qdisc MAJOR.
 * Not libbpf's bpf_tc_attach(): the filter must carry the classid MAJOR:0,
 * because the program can only set the minor (qdisc_skb_cb's tc_classid
 * has 16 bits, and cls_bpf ORs it into the filter's classid).
 */
static int add_filter(int ifindex, __u32 major, int prog_fd)
{
	struct {
		struct nlmsghdr n;
		struct tcmsg t;
		char attrs[256];
	} req = {
		.n.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)),
		.n.nlmsg_type = RTM_NEWTFILTER,
		.n.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL,
		.n.nlmsg_seq = 1,
		.t.tcm_family = AF_UNSPEC,
		.t.tcm_ifindex = ifindex,
		.t.tcm_parent = major,
		.t.tcm_handle = CG_HANDLE,
		.t.tcm_info = TC_H_MAKE(CG_PRIO << 16, htons(ETH_P_ALL)),
	};
	struct rtattr *nest;
	__u32 flags = TCA_BPF_FLAG_ACT_DIRECT, fd32 = prog_fd;
	char ack[1024];
	struct nlmsghdr *h = (struct nlmsghdr *)ack;
	int fd, len, err = -EPROTO;

	nl_attr(&req.n, sizeof(req), TCA_KIND, "bpf", 4);
	nest = nl_attr(&req.n, sizeof(req), TCA_OPTIONS, NULL, 0);
	nl_attr(&req.n, sizeof(req), TCA_BPF_FD, &fd32, sizeof(fd32));
	nl_attr(&req.n, sizeof(req), TCA_BPF_NAME, PROG_NAME, sizeof(PROG_NAME));
	nl_attr(&req.n, sizeof(req), TCA_BPF_FLAGS, &flags, sizeof(flags));
	nl_attr(&req.n, sizeof(req), TCA_BPF_CLASSID, &major, sizeof(major));
	nest->rta_len = (char *)&req + req.n.nlmsg_len - (char *)nest;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, req.n.nlmsg_len, 0) < 0) {
		err = -errno;
		goto out;
	}
	len = recv(fd, ack, sizeof(ack), 0);
	if (len < 0)
		err = -errno;
	else if (NLMSG_OK(h, (unsigned int)len) && h->nlmsg_type == NLMSG_ERROR)
		err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
out:
	close(fd);
	return err;
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

static void need_bpffs(void)
{
	struct statfs st;

	if (statfs(BPFFS, &st) || st.f_type != BPF_FS_MAGIC)
		die("no bpffs at " BPFFS " (mount -t bpf bpf " BPFFS ")");
}

/* pin_dir: where DEV's map is pinned; the netns is part of the name. */
static void pin_dir(int ifindex, char *buf, size_t len)
{
	struct stat self, init;

	if (stat("/proc/self/ns/net", &self) == 0 &&
	    (stat("/proc/1/ns/net", &init) || self.st_ino != init.st_ino))
		snprintf(buf, len, PIN_ROOT "/%d-ns%lu", ifindex,
			 (unsigned long)self.st_ino);
	else
		snprintf(buf, len, PIN_ROOT "/%d", ifindex);
}

/* open_map: DEV's pinned map, or an error if DEV is not attached. */
static int open_map(int ifindex)
{
	char dir[PATH_MAX], path[PATH_MAX + 8];
	int fd;

	need_bpffs();
	pin_dir(ifindex, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/map", dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		die("%s is not attached (no %s): run carousel-cgroup attach %s",
		    dev, path, dev);
	return fd;
}

/* cgroup_id: the id of the cgroup v2 directory PATH (its inode number). */
static __u64 cgroup_id(const char *path)
{
	struct statfs sfs;
	struct stat st;

	if (statfs(path, &sfs) || stat(path, &st))
		die("%s: %s", path, strerror(errno));
	if (sfs.f_type == CGROUP_SUPER_MAGIC)
		die("%s is a cgroup v1 directory: use net_cls.classid and a tc cgroup filter",
		    path);
	if (sfs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
		die("%s is not a cgroup v2 directory", path);
	return st.st_ino;
}

/* parse_classid: "MAJOR:MINOR" in hex, as tc writes it. */
static __u32 parse_classid(const char *arg)
{
	unsigned long maj, min;
	const char *s = arg;
	char *end;

	maj = strtoul(s, &end, 16);
	if (end == s || *end != ':')
		die("bad classid \"%s\" (want MAJOR:MINOR, e.g. 1:10)", arg);
	s = end + 1;
	min = strtoul(s, &end, 16);
	if (end == s || *end || maj > 0xffff || min > 0xffff || !min)
		die("bad classid \"%s\" (want MAJOR:MINOR, e.g. 1:10)", arg);
	return TC_H_MAKE(maj << 16, min);
}

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

/* ---- commands ---------------------------------------------------------- */

static bool our_filter(const struct bpf_tc_hook *hook, struct bpf_tc_opts *q)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int fd;
	bool ours;

	q->handle = CG_HANDLE;
	q->priority = CG_PRIO;
	q->prog_fd = 0;
	q->flags = 0;
	q->prog_id = 0;
	if (bpf_tc_query(hook, q))
		return false;
	fd = bpf_prog_get_fd_by_id(q->prog_id);
	if (fd < 0)
		return false;
	ours = !bpf_obj_get_info_by_fd(fd, &info, &len) &&
	       !strcmp(info.name, PROG_NAME);
	close(fd);
	return ours;
}

static int cmd_attach(void)
{
	int ifindex = dev_ifindex(), err, prog_fd;
	__u32 major = need_carousel(ifindex);
	char dir[PATH_MAX], path[PATH_MAX + 8];
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_CUSTOM, .parent = major);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, q, .handle = CG_HANDLE,
			    .priority = CG_PRIO);
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	struct stat st;

	need_bpffs();
	pin_dir(ifindex, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/map", dir);
	if (stat(path, &st) == 0)
		die("%s is already attached (%s exists)", dev, path);
	if (bpf_tc_query(&hook, &q) == 0)
		die("%s already has a filter with prio 0x%x handle 0x%x on %x:",
		    dev, CG_PRIO, CG_HANDLE, major >> 16);

	obj = bpf_object__open_mem(carousel_bpf_obj,
				   carousel_bpf_obj_end - carousel_bpf_obj, NULL);
	if (!obj)
		die("cannot open the BPF object: %s", strerror(errno));
	map = bpf_object__find_map_by_name(obj, MAP_NAME);
	prog = bpf_object__find_program_by_name(obj, PROG_NAME);
	if (!map || !prog)
		die("the BPF object has no map " MAP_NAME " or program " PROG_NAME);
	if (mkdir(PIN_ROOT, 0700) && errno != EEXIST)
		die("mkdir " PIN_ROOT ": %s", strerror(errno));
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = errno;
		rmdir(PIN_ROOT);
		die("mkdir %s: %s", dir, strerror(err));
	}
	err = bpf_map__set_pin_path(map, path);
	if (!err)
		err = bpf_object__load(obj);	/* creates and pins the map */
	if (err) {
		bpf_object__close(obj);
		unlink(path);
		rmdir(dir);
		rmdir(PIN_ROOT);
		die("cannot load the BPF classifier: %s (CAROUSEL_CGROUP_DEBUG=1 for details)",
		    strerror(-err));
	}
	prog_fd = bpf_program__fd(prog);
	err = add_filter(ifindex, major, prog_fd);
	if (err) {
		bpf_map__unpin(map, NULL);
		bpf_object__close(obj);
		rmdir(dir);
		rmdir(PIN_ROOT);
		die("cannot add the tc filter on %s: %s", dev, strerror(-err));
	}
	bpf_object__close(obj);	/* the filter holds the program, the pin the map */
	return 0;
}

static int cmd_detach(void)
{
	int ifindex = dev_ifindex(), err;
	char dir[PATH_MAX], path[PATH_MAX + 8];
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = BPF_TC_CUSTOM);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, q);
	bool filter = false, pinned;
	__u32 major;
	struct stat st;

	need_bpffs();
	pin_dir(ifindex, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/map", dir);
	pinned = stat(path, &st) == 0;
	if (root_major(ifindex, &major)) {
		hook.parent = major;
		filter = our_filter(&hook, &q);
	}
	if (!filter && !pinned)
		die("%s is not attached", dev);
	if (filter) {
		DECLARE_LIBBPF_OPTS(bpf_tc_opts, d, .handle = CG_HANDLE,
				    .priority = CG_PRIO);

		err = bpf_tc_detach(&hook, &d);
		if (err)
			die("cannot delete the tc filter on %s: %s", dev,
			    strerror(-err));
	}
	if (pinned && unlink(path))
		die("cannot remove %s: %s", path, strerror(errno));
	rmdir(dir);
	rmdir(PIN_ROOT);	/* fails while other devices are attached */
	return 0;
}

static int cmd_set(const char *cg, const char *cls)
{
	int ifindex = dev_ifindex(), fd;
	__u32 major = need_carousel(ifindex), classid;
	struct tc_obj cl;
	__u64 id;

	fd = open_map(ifindex);
	id = cgroup_id(cg);
	classid = parse_classid(cls);
	if (TC_H_MAJ(classid) != major)
		die("classid %s is not on %s's carousel qdisc %x:", cls, dev,
		    major >> 16);
	if (!class_get(ifindex, classid, &cl))
		die("no class %s on %s", cls, dev);
	if (bpf_map_update_elem(fd, &id, &classid, BPF_ANY))
		die("cannot map %s to %s: %s", cg, cls, strerror(errno));
	return 0;
}

static int cmd_del(const char *cg)
{
	int ifindex = dev_ifindex(), fd;
	__u64 id;

	fd = open_map(ifindex);
	id = cgroup_id(cg);
	if (bpf_map_delete_elem(fd, &id))
		die("%s has no class on %s", cg, dev);
	return 0;
}

/* list: the map's entries, with paths found by walking the cgroup2 mount. */
static struct entry {
	__u64 id;
	__u32 classid;
	char *path;
} ent[MAX_ENTRIES];
static int nent;

static int walk_cb(const char *fpath, const struct stat *st, int type,
		   struct FTW *ftw)
{
	int i;

	(void)ftw;
	if (type != FTW_D)
		return FTW_CONTINUE;
	for (i = 0; i < nent; i++)
		if (ent[i].id == st->st_ino && !ent[i].path)
			ent[i].path = strdup(fpath);
	return FTW_CONTINUE;
}

static void find_paths(void)
{
	char line[4096], mnt[PATH_MAX], fstype[64];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return;
	/* "id parent maj:min root mountpoint opts [tags] - fstype src opts" */
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s", fstype) != 1 ||
		    strcmp(fstype, "cgroup2") ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		nftw(mnt, walk_cb, 32, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL);
	}
	fclose(f);
}

static int cmp_path(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return strcmp(x->path ? x->path : "~", y->path ? y->path : "~");
}

static int cmd_list(void)
{
	int ifindex = dev_ifindex(), fd, i;
	__u64 key, next, *prev = NULL;

	fd = open_map(ifindex);
	while (nent < MAX_ENTRIES && !bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &ent[nent].classid))
			continue;	/* deleted meanwhile */
		ent[nent++].id = key;
	}
	find_paths();
	qsort(ent, nent, sizeof(ent[0]), cmp_path);
	for (i = 0; i < nent; i++) {
		struct tc_obj cl;
		char rate[32] = "no-such-class";

		if (class_get(ifindex, ent[i].classid, &cl) && cl.has_rate)
			sprint_rate(rate, sizeof(rate), cl.rate);
		printf("%s %llu %x:%x %s\n",
		       ent[i].path ? ent[i].path : "(deleted)",
		       (unsigned long long)ent[i].id,
		       TC_H_MAJ(ent[i].classid) >> 16,
		       TC_H_MIN(ent[i].classid), rate);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 3)
		usage();
	cmd = argv[1];
	dev = argv[2];
	libbpf_set_print(libbpf_quiet);
	if (!strcmp(cmd, "attach") && argc == 3)
		return cmd_attach();
	if (!strcmp(cmd, "detach") && argc == 3)
		return cmd_detach();
	if (!strcmp(cmd, "set") && argc == 5)
		return cmd_set(argv[3], argv[4]);
	if (!strcmp(cmd, "del") && argc == 4)
		return cmd_del(argv[3]);
	if (!strcmp(cmd, "list") && argc == 3)
		return cmd_list();
	usage();
}
