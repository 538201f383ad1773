// SPDX-License-Identifier: GPL-2.0
/*
 * insncount.c - a QEMU TCG plugin that counts the guest instructions
 * executed between two marker instructions, for the deterministic cost
 * benchmark (insnbench.sh, docs/bench/README.md).
 *
 *   qemu ... -icount shift=0,sleep=off -smp 1 \
 *       -plugin insncount.so,out=FILE[,pertb=on]
 *
 * The guest opens a window by executing `xchg %bx,%bx' (66 87 db) and
 * closes it with `xchg %cx,%cx' (66 87 c9): both are no-ops, in any
 * mode, and compilers do not emit them.  insnmark.c executes them around
 * the work to be counted.  For every window closed, one line goes to FILE:
 *
 *   window N insns COUNT rep REP
 *
 * and with pertb=on, before it, one line per translated block that ran in
 * the window:
 *
 *   tb VADDR NINSNS EXECS [rep]
 *
 * (VADDR in hex; NINSNS x EXECS instructions), for a breakdown by the
 * guest's /proc/kallsyms.
 *
 * A string instruction with a rep prefix (rep stos, rep movs, ...) is a
 * block of its own that QEMU runs once per iteration: a 4 KiB page
 * cleared by `rep stosb' counts 4096.  Those blocks are marked "rep", and
 * REP is how many of COUNT they made, so that a reader can count such an
 * instruction as the one instruction it is, or as its iterations.
 *
 * Counting: an inline add of the block's instruction count at the entry
 * of every block (one vCPU: the inline counter is not atomic), so a block
 * left early (an exception) counts whole; with -icount the guest's
 * interrupts come at fixed instruction counts, and the counts repeat.
 * Written against the QEMU plugin API of Debian 12's QEMU 7.2 (version 1).
 */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

static const unsigned char mark_open[] = { 0x66, 0x87, 0xdb };
static const unsigned char mark_close[] = { 0x66, 0x87, 0xc9 };

/* One per distinct block (start address and length). */
struct block {
	uint64_t vaddr;
	uint64_t ninsns;
	uint64_t execs;		/* inline counter */
	uint64_t execs_open;	/* execs when the window opened */
	bool rep;		/* a lone rep-prefixed string instruction */
};

static uint64_t insns;		/* inline counter: all blocks */
static uint64_t insns_open;
static uint64_t reps;		/* inline counter: rep string blocks */
static uint64_t reps_open;
static bool in_window;
static unsigned long windows;
static bool per_block;
static FILE *out;
static GHashTable *blocks;	/* "vaddr/ninsns" -> struct block */
static GMutex lock;		/* translation may run beside execution */

static void snapshot(gpointer key, gpointer value, gpointer data)
{
	struct block *b = value;

	b->execs_open = b->execs;
}

static void report(gpointer key, gpointer value, gpointer data)
{
	struct block *b = value;

	if (b->execs != b->execs_open)
		fprintf(out, "tb %" PRIx64 " %" PRIu64 " %" PRIu64 "%s\n",
			b->vaddr, b->ninsns, b->execs - b->execs_open,
			b->rep ? " rep" : "");
}

static void on_open(unsigned int vcpu, void *udata)
{
	g_mutex_lock(&lock);
	if (per_block)
		g_hash_table_foreach(blocks, snapshot, NULL);
	insns_open = insns;
	reps_open = reps;
	in_window = true;
	g_mutex_unlock(&lock);
}

static void on_close(unsigned int vcpu, void *udata)
{
	g_mutex_lock(&lock);
	if (in_window) {
		windows++;
		if (per_block)
			g_hash_table_foreach(blocks, report, NULL);
		fprintf(out, "window %lu insns %" PRIu64 " rep %" PRIu64 "\n",
			windows, insns - insns_open, reps - reps_open);
		fflush(out);
	}
	in_window = false;
	g_mutex_unlock(&lock);
}

static bool is_mark(struct qemu_plugin_insn *insn, const unsigned char *m)
{
	return qemu_plugin_insn_size(insn) == 3 &&
	       !memcmp(qemu_plugin_insn_data(insn), m, 3);
}

/*
 * A string instruction (movs, cmps, stos, lods, scas, ins, outs) with a
 * rep/repne prefix, among any other prefixes (operand and address size,
 * segment, REX)?
 */
static bool is_rep_string(struct qemu_plugin_insn *insn)
{
	const unsigned char *p = qemu_plugin_insn_data(insn);
	size_t i, n = qemu_plugin_insn_size(insn);
	bool rep = false;

	for (i = 0; i < n; i++) {
		unsigned char b = p[i];

		if (b == 0xf2 || b == 0xf3)
			rep = true;
		else if (b == 0x66 || b == 0x67 || b == 0x2e || b == 0x36 ||
			 b == 0x3e || b == 0x26 || b == 0x64 || b == 0x65 ||
			 (b >= 0x40 && b <= 0x4f))
			continue;
		else
			return rep && i == n - 1 &&
			       ((b >= 0xa4 && b <= 0xa7) ||
				(b >= 0xaa && b <= 0xaf) ||
				(b >= 0x6c && b <= 0x6f));
	}
	return false;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	bool rep = n == 1 && is_rep_string(qemu_plugin_tb_get_insn(tb, 0));

	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &insns, n);
	if (rep)
		qemu_plugin_register_vcpu_tb_exec_inline(tb,
			QEMU_PLUGIN_INLINE_ADD_U64, &reps, 1);
	if (per_block) {
		uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
		char *key = g_strdup_printf("%" PRIx64 "/%zu%s", vaddr, n,
					    rep ? "r" : "");
		struct block *b;

		g_mutex_lock(&lock);
		b = g_hash_table_lookup(blocks, key);
		if (!b) {
			b = g_new0(struct block, 1);
			b->vaddr = vaddr;
			b->ninsns = n;
			b->rep = rep;
			g_hash_table_insert(blocks, key, b);
		} else {
			g_free(key);
		}
		g_mutex_unlock(&lock);
		qemu_plugin_register_vcpu_tb_exec_inline(tb,
			QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
	}
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);

		if (is_mark(insn, mark_open))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_open,
				QEMU_PLUGIN_CB_NO_REGS, NULL);
		else if (is_mark(insn, mark_close))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_close,
				QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
}

static void on_atexit(qemu_plugin_id_t id, void *udata)
{
	if (out)
		fclose(out);
	out = NULL;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *path = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else if (!strcmp(argv[i], "pertb=on"))
			per_block = true;
		else if (strcmp(argv[i], "pertb=off")) {
			fprintf(stderr, "insncount: unknown argument '%s'\n",
				argv[i]);
			return -1;
		}
	}
	if (!path) {
		fprintf(stderr, "insncount: out=FILE is required\n");
		return -1;
	}
	if (info->system_emulation && info->system.max_vcpus > 1) {
		fprintf(stderr, "insncount: one vCPU only (-smp 1): the counters are not atomic\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	blocks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
				       g_free);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
