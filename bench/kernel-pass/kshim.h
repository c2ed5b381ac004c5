/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * kshim.h: just enough of the kernel for verbatim.c to compile, unchanged,
 * the functions a patch adds to kernel/module/kallsyms.c and
 * kernel/trace/ftrace.c, as x86_64 builds them: the structures they read
 * are laid out as include/linux/module.h has them, and the helpers they
 * call do what the kernel's do (bit operations a word at a time, as
 * lib/find_bit.c).  ftrace_call_adjust() is x86's, the identity, and
 * MCOUNT_INSN_SIZE x86's 5 (a call with a 32-bit displacement).
 * Locking and RCU cost nothing here; the module is not shared.
 *
 * With -DMCOUNT_INSN_SIZE=N the arch is the one contain.sh names (any of
 * them, x86 too): its ftrace_call_adjust() comes verbatim from its arch/
 * file with the rest, and the Kconfig options that function tests arrive
 * as -DCONFIG_X=0|1 from the tree's config.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef MCOUNT_INSN_SIZE
#define SHIM_X86 1
#define FTRACE_MCOUNT_MAX_OFFSET 4	/* ENDBR_INSN_SIZE: x86_64 with IBT */
#define MCOUNT_INSN_SIZE 5
#endif
#define CONFIG_MODULES 1
#define CONFIG_KALLSYMS 1
#define GFP_KERNEL 0
#define ENOMEM 12
#define BITS_PER_LONG 64
#define BITS_TO_LONGS(n) (((n) + BITS_PER_LONG - 1) / BITS_PER_LONG)

typedef Elf64_Sym Elf_Sym;
#define ELF_ST_TYPE(info) ELF64_ST_TYPE(info)
#define ELF_ST_BIND(info) ELF64_ST_BIND(info)

enum mod_mem_type {
	MOD_TEXT = 0,
	MOD_DATA,
	MOD_RODATA,
	MOD_RO_AFTER_INIT,
	MOD_INIT_TEXT,
	MOD_INIT_DATA,
	MOD_INIT_RODATA,
	MOD_MEM_NUM_TYPES,
};

struct module_memory {
	void *base;
	bool is_rox;
	unsigned int size;
};

struct mod_kallsyms {
	Elf_Sym *symtab;
	unsigned int num_symtab;
	char *strtab;
	char *typetab;
};

struct module {
	struct module_memory mem[MOD_MEM_NUM_TYPES];
	struct mod_kallsyms *kallsyms;
};

#define mod_mem_type_is_text(type) ((type) == MOD_TEXT || (type) == MOD_INIT_TEXT)
#define for_each_mod_mem_type(type) \
	for (enum mod_mem_type (type) = 0; (type) < MOD_MEM_NUM_TYPES; (type)++)
#define for_class_mod_mem_type(type, class) \
	for_each_mod_mem_type(type) if (mod_mem_type_is_##class(type))

static inline bool within_module_mem_type(unsigned long addr, const struct module *mod,
					  enum mod_mem_type type)
{
	return addr - (unsigned long)mod->mem[type].base < mod->mem[type].size;
}

static inline unsigned long kallsyms_symbol_value(const Elf_Sym *sym)
{
	return sym->st_value;
}

/* include/linux/module_symbol.h's rule: ".L" and "L0" prefixes, and "$". */
static inline int is_mapping_symbol(const char *str)
{
	if (str[0] == '.' && str[1] == 'L')
		return true;
	if (str[0] == 'L' && str[1] == '0')
		return true;
	return str[0] == '$';
}

static inline void shim_nothing(void) { }
#define guard(lock) shim_nothing
#define rcu_read_lock() shim_nothing()
#define rcu_read_unlock() shim_nothing()
#define rcu_dereference(p) (p)

#ifndef SHIM_X86
/* What the arches' ftrace_call_adjust() use; a warning is counted. */
static unsigned long shim_warnings;
#define IS_ENABLED(option) (option)
#define IS_ALIGNED(x, a) (((x) & ((a) - 1)) == 0)
static inline bool shim_warn(bool cond)
{
	shim_warnings += cond;
	return cond;
}
#define WARN_RATELIMIT(cond, ...) shim_warn(cond)
#define AARCH64_INSN_SIZE 4
#define MCOUNT_AUIPC_SIZE 4	/* arch/riscv/include/asm/ftrace.h */
typedef uint32_t u32;
typedef uint32_t __le32;
#define le32_to_cpu(x) (x)
/* HINT #0 is NOP; BTI, BTI c, BTI j and BTI jc are HINT #32, #34, #36, #38. */
static inline u32 aarch64_insn_gen_nop(void)
{
	return 0xd503201f;
}

static inline bool aarch64_insn_is_bti(u32 insn)
{
	return (insn & ~0xc0u) == 0xd503241f;
}

/*
 * powerpc's: a module's words lie in none of vmlinux's text, so the
 * exit-text range is empty.  Only clang builds read an instruction, and
 * the dump has no text bytes: contain.sh refuses them, and a read aborts.
 */
#define __exittext_begin ((char *)0)
#define __exittext_end ((char *)0)
#define is_kernel_text(addr) false
#define is_kernel_inittext(addr) false
#define ppc_function_entry(p) ((unsigned long)(p))
typedef u32 ppc_inst_t;
#define ppc_inst_val(x) (x)
static inline ppc_inst_t ppc_inst_read(const u32 *p)
{
	(void)p;
	abort();
}
#define PPC_RAW_LD(t, a, i) 0u
#define PPC_RAW_ADD(t, a, b) 0u
#else
static inline unsigned long ftrace_call_adjust(unsigned long addr)
{
	return addr;
}
#endif

static inline unsigned long rounddown_pow_of_two(unsigned long n)
{
	return 1UL << (63 - __builtin_clzl(n));
}

static inline unsigned long *bitmap_zalloc(unsigned long nbits, int flags)
{
	(void)flags;
	return calloc((nbits + BITS_PER_LONG - 1) / BITS_PER_LONG, sizeof(unsigned long));
}

static inline void bitmap_free(unsigned long *map)
{
	free(map);
}

static inline void shim_free_bitmap(unsigned long **map)
{
	if (*map)
		bitmap_free(*map);
}
static inline void *kvmalloc_array(size_t n, size_t size, int flags)
{
	(void)flags;
	return malloc(n * size + 1);
}

static inline void *kvcalloc(size_t n, size_t size, int flags)
{
	(void)flags;
	return calloc(n + 1, size);
}

static inline void shim_free_kvfree(unsigned long **p)
{
	free(*p);
}
#define __free(kind) __attribute__((cleanup(shim_free_##kind)))

static inline void __set_bit(unsigned long nr, unsigned long *map)
{
	map[nr / BITS_PER_LONG] |= 1UL << (nr % BITS_PER_LONG);
}

static inline bool test_bit(unsigned long nr, const unsigned long *map)
{
	return map[nr / BITS_PER_LONG] >> (nr % BITS_PER_LONG) & 1;
}

/* find_next_zero_bit(): a word at a time, as lib/find_bit.c. */
static inline unsigned long shim_next_zero(const unsigned long *map, unsigned long size,
					   unsigned long at)
{
	unsigned long word;

	if (at >= size)
		return size;
	word = ~map[at / BITS_PER_LONG] & (~0UL << (at % BITS_PER_LONG));
	while (!word) {
		at = (at / BITS_PER_LONG + 1) * BITS_PER_LONG;
		if (at >= size)
			return size;
		word = ~map[at / BITS_PER_LONG];
	}
	at = at / BITS_PER_LONG * BITS_PER_LONG + __builtin_ctzl(word);
	return at < size ? at : size;
}
#define for_each_clear_bit(bit, map, size) \
	for ((bit) = shim_next_zero((map), (size), 0); (bit) < (size); \
	     (bit) = shim_next_zero((map), (size), (bit) + 1))
