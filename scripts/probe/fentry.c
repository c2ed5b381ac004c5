// SPDX-License-Identifier: GPL-2.0-only
/*
 * fentry: attach one BPF fentry program to each named function of a
 * module, run a command, and report how often each program ran.  A static
 * program that talks to bpf(2) directly (no libbpf in the guest):
 *
 *   - the functions' BTF ids come from /sys/kernel/btf/MODULE, split BTF
 *     whose ids continue those of /sys/kernel/btf/vmlinux;
 *   - the module's BTF object is found with BPF_BTF_GET_NEXT_ID and
 *     BPF_OBJ_GET_INFO_BY_FD (its name is the module's);
 *   - each program adds 1 to its own slot of one array map, and is attached
 *     with BPF_RAW_TRACEPOINT_OPEN (which takes fentry programs too), the
 *     same path as a BPF trampoline from libbpf: kernel/bpf/trampoline.c.
 *
 * Usage: fentry MODULE COMMAND FUNCTION...
 * Prints one line per function:
 *   "FENTRY F btf_id=N load=RC attach=RC hits=N"   (RC: 0 or -errno)
 * after COMMAND (run with sh -c while every program is attached) returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

struct blob {
	uint8_t *data;
	size_t len;
};

static int slurp(const char *path, struct blob *b)
{
	int fd = open(path, O_RDONLY);
	size_t cap = 1 << 20;

	if (fd < 0)
		return -1;
	b->data = malloc(cap);
	b->len = 0;
	for (;;) {
		ssize_t n;

		if (b->len == cap)
			b->data = realloc(b->data, cap *= 2);
		n = read(fd, b->data + b->len, cap - b->len);
		if (n <= 0)
			break;
		b->len += n;
	}
	close(fd);
	return 0;
}

struct btf_hdr_ {
	uint16_t magic;
	uint8_t version, flags;
	uint32_t hdr_len, type_off, type_len, str_off, str_len;
};

/* Walk the types of a BTF blob: calls f(kind, name_off, index) for each;
 * returns how many there are, or -1 when a kind is unknown. */
static long walk(const struct blob *b, const char **strs, uint32_t *str_len,
		 const char *want, uint32_t base_str_len, const char *base_strs,
		 long *found)
{
	const struct btf_hdr_ *h = (const void *)b->data;
	const uint8_t *p = b->data + h->hdr_len + h->type_off;
	const uint8_t *end = p + h->type_len;
	long n = 0;

	*strs = (const char *)b->data + h->hdr_len + h->str_off;
	*str_len = h->str_len;
	while (p < end) {
		uint32_t name_off = ((const uint32_t *)p)[0];
		uint32_t info = ((const uint32_t *)p)[1];
		uint32_t kind = (info >> 24) & 0x1f, vlen = info & 0xffff;
		size_t extra;

		switch (kind) {
		case 1: case 14: case 17: extra = 4; break;              /* INT VAR DECL_TAG */
		case 3: extra = 12; break;                               /* ARRAY */
		case 4: case 5: case 15: case 19: extra = 12 * vlen; break; /* STRUCT UNION DATASEC ENUM64 */
		case 6: case 13: extra = 8 * vlen; break;                /* ENUM FUNC_PROTO */
		case 2: case 7: case 8: case 9: case 10: case 11: case 12: case 16: case 18:
			extra = 0; break;
		default:
			return -1;
		}
		n++;
		if (want && kind == 12) {                                /* FUNC */
			const char *name;

			if (name_off >= base_str_len)
				name = *strs + (name_off - base_str_len);
			else
				name = base_strs + name_off;
			if (!strcmp(name, want))
				*found = n;
		}
		p += 12 + extra;
	}
	return n;
}

static int module_btf_fd(const char *mod)
{
	union bpf_attr a;
	uint32_t id = 0;

	for (;;) {
		struct bpf_btf_info info;
		char name[64];
		int fd;

		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (sys_bpf(BPF_BTF_GET_NEXT_ID, &a) < 0)
			return -1;
		id = a.next_id;
		memset(&a, 0, sizeof(a));
		a.btf_id = id;
		fd = sys_bpf(BPF_BTF_GET_FD_BY_ID, &a);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		memset(name, 0, sizeof(name));
		info.name = (uintptr_t)name;
		info.name_len = sizeof(name);
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = fd;
		a.info.info = (uintptr_t)&info;
		a.info.info_len = sizeof(info);
		if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 && !strcmp(name, mod))
			return fd;
		close(fd);
	}
}

int main(int argc, char **argv)
{
	struct blob vml, modb;
	const char *vstrs, *mstrs;
	uint32_t vstr_len, mstr_len;
	long nbase, dummy;
	int nf = argc - 3, i, btf_fd, map_fd;
	union bpf_attr a;
	char path[256];
	static char log[1 << 16];

	if (argc < 4) {
		fprintf(stderr, "usage: fentry MODULE COMMAND FUNCTION...\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/sys/kernel/btf/%s", argv[1]);
	if (slurp("/sys/kernel/btf/vmlinux", &vml) || slurp(path, &modb)) {
		printf("fentry: error reading BTF: %s\n", strerror(errno));
		return 1;
	}
	nbase = walk(&vml, &vstrs, &vstr_len, NULL, 0, NULL, &dummy);
	if (nbase < 0) {
		printf("fentry: error: unknown BTF kind in vmlinux\n");
		return 1;
	}
	btf_fd = module_btf_fd(argv[1]);
	if (btf_fd < 0) {
		printf("fentry: error: no BTF object for %s\n", argv[1]);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.map_type = BPF_MAP_TYPE_ARRAY;
	a.key_size = 4;
	a.value_size = 8;
	a.max_entries = nf;
	map_fd = sys_bpf(BPF_MAP_CREATE, &a);
	if (map_fd < 0) {
		printf("fentry: error BPF_MAP_CREATE: %s\n", strerror(errno));
		return 1;
	}
	long ids[nf], lrc[nf], arc[nf];

	for (i = 0; i < nf; i++) {
		long found = -1, prog_fd, link_fd;

		if (walk(&modb, &mstrs, &mstr_len, argv[3 + i], vstr_len, vstrs, &found) < 0)
			found = -1;
		ids[i] = found < 0 ? -1 : nbase + found;
		lrc[i] = arc[i] = -ENOENT;
		if (found < 0)
			continue;
		struct bpf_insn prog[] = {
			/* *(u32 *)(r10 - 4) = i */
			{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4, .imm = i },
			/* r2 = r10 - 4 */
			{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
			{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
			/* r1 = map */
			{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1, .src_reg = BPF_PSEUDO_MAP_FD, .imm = map_fd },
			{ 0 },
			/* r0 = bpf_map_lookup_elem(r1, r2) */
			{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
			/* if r0 == 0 goto out */
			{ .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0, .off = 2, .imm = 0 },
			/* r1 = 1; lock *(u64 *)(r0 + 0) += r1 */
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
			{ .code = BPF_STX | BPF_DW | BPF_ATOMIC, .dst_reg = BPF_REG_0, .src_reg = BPF_REG_1, .imm = BPF_ADD },
			/* out: return 0 */
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
			{ .code = BPF_JMP | BPF_EXIT },
		};
		memset(&a, 0, sizeof(a));
		a.prog_type = BPF_PROG_TYPE_TRACING;
		a.expected_attach_type = BPF_TRACE_FENTRY;
		a.insns = (uintptr_t)prog;
		a.insn_cnt = sizeof(prog) / sizeof(prog[0]);
		a.license = (uintptr_t)"GPL";
		a.attach_btf_id = ids[i];
		a.attach_btf_obj_fd = btf_fd;
		a.log_buf = (uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
		log[0] = 0;
		prog_fd = sys_bpf(BPF_PROG_LOAD, &a);
		lrc[i] = prog_fd < 0 ? -errno : 0;
		if (prog_fd < 0) {
			printf("fentry: %s: BPF_PROG_LOAD: %s; verifier: %.400s\n", argv[3 + i],
			       strerror(errno), log);
			continue;
		}
		memset(&a, 0, sizeof(a));
		a.raw_tracepoint.prog_fd = prog_fd;
		link_fd = sys_bpf(BPF_RAW_TRACEPOINT_OPEN, &a);
		arc[i] = link_fd < 0 ? -errno : 0;
		/* prog_fd and link_fd stay open until exit: the links live until then. */
	}
	fflush(stdout);
	if (system(argv[2]) != 0)
		printf("fentry: the command failed\n");
	for (i = 0; i < nf; i++) {
		uint32_t key = i;
		uint64_t val = 0;

		memset(&a, 0, sizeof(a));
		a.map_fd = map_fd;
		a.key = (uintptr_t)&key;
		a.value = (uintptr_t)&val;
		sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
		printf("FENTRY %s btf_id=%ld load=%ld attach=%ld hits=%llu\n", argv[3 + i], ids[i],
		       lrc[i], arc[i], (unsigned long long)val);
	}
	return 0;
}
