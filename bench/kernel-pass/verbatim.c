// SPDX-License-Identifier: GPL-2.0-only
/*
 * verbatim.c: a kernel series' own load-time pass, compiled unchanged
 * (extract.py pulls it out of the patched kernel files at run time), over
 * what dump.py wrote for real modules.  run.sh builds one binary per
 * series, with
 *
 *   -DVERBATIM='"FILE"'                       the extracted definitions
 *   -D'CANDIDATE_CALL(mod, words, n)=CALL'    how the series' entry point,
 *                                             as ftrace_process_locs() calls
 *                                             it, is called
 *
 *   verbatim DUMP...      run once per module and check the words it kept
 *                         against the kernel's own per-record rule (stock
 *                         test_for_valid_rec() over find_kallsyms_symbol());
 *                         exit 1 on any difference
 *   verbatim -c DUMP...   run once per module, for
 *                         valgrind --tool=callgrind --toggle-collect=run_candidate
 *
 * Built with the arch's own ftrace_call_adjust() (-DMCOUNT_INSN_SIZE=N,
 * kshim.h), the columns after the counts are instead the table offsets
 * (word index times TABLE_WORD, 8 unless given: the tool's --format=json
 * table_offset) of the words the series cleared, for contain.py to hold
 * against the tool's; the warnings ftrace_call_adjust() gave; and, with
 * -DSTOCK_MAX_OFFSET=N (the arch's FTRACE_MCOUNT_MAX_OFFSET), every word
 * where stock's check and the series part: +OFFSET=NAME+DIST where stock
 * keeps the record and the series cleared the word, -OFFSET=NAME+DIST the
 * other way round, NAME+DIST being what kallsyms reports for its ip.
 *
 * The module is laid out as the loader leaves it for ftrace_process_locs():
 * struct module's memory regions and its full ELF symbol table (what
 * add_kallsyms() points mod->kallsyms at), and the callsite words sorted.
 */
#include <stdio.h>
#include "kshim.h"
#include VERBATIM

struct dump {
	const char *path;
	struct module mod;
	struct mod_kallsyms ks;
	unsigned long *words, n;
	unsigned long *order;	/* order[k]: the table index of sorted word k */
	uint64_t nregions;
	uint64_t *region;	/* base, size pairs */
	uint64_t *nameable;	/* dump.py's find_kallsyms_symbol() filter */
};

static void *read_array(FILE *f, uint64_t n, size_t each, const char *path)
{
	void *p = malloc(n * each + 1);

	if (!p || fread(p, each, n, f) != n) {
		fprintf(stderr, "verbatim: %s: truncated dump\n", path);
		exit(2);
	}
	return p;
}

static uint64_t read_u64(FILE *f, const char *path)
{
	uint64_t v;

	if (fread(&v, 8, 1, f) != 1) {
		fprintf(stderr, "verbatim: %s: truncated dump\n", path);
		exit(2);
	}
	return v;
}

static const unsigned long *sort_by;

static int cmp_index(const void *a, const void *b)
{
	unsigned long x = sort_by[*(const unsigned long *)a], y = sort_by[*(const unsigned long *)b];

	return x < y ? -1 : x > y;
}

static void load(struct dump *d, const char *path)
{
	FILE *f = fopen(path, "rb");
	char magic[8];
	uint64_t nsyms, *sym, *names, strsize, *types;
	unsigned long *sorted;

	if (!f || fread(magic, 8, 1, f) != 1 || memcmp(magic, "zwmpass1", 8)) {
		fprintf(stderr, "verbatim: %s: not a dump.py file\n", path);
		exit(2);
	}
	memset(d, 0, sizeof(*d));
	d->path = path;
	read_u64(f, path);	/* max offset: FTRACE_MCOUNT_MAX_OFFSET is compiled in */
	d->nregions = read_u64(f, path);
	d->region = read_array(f, d->nregions * 2, 8, path);
	nsyms = read_u64(f, path);
	sym = read_array(f, nsyms * 2, 8, path);
	d->n = read_u64(f, path);
	d->words = read_array(f, d->n, 8, path);
	if (fread(magic, 8, 1, f) != 1 || memcmp(magic, "zwmsyms1", 8)) {
		fprintf(stderr, "verbatim: %s: a dump without symbol names (re-run dump.py)\n", path);
		exit(2);
	}
	types = read_array(f, d->nregions, 8, path);
	names = read_array(f, nsyms * 2, 8, path);
	strsize = read_u64(f, path);
	d->ks.strtab = read_array(f, strsize, 1, path);
	if (fread(magic, 8, 1, f) == 1 && !memcmp(magic, "zwmfunc1", 8)) {
		uint64_t *funcs = read_array(f, nsyms * 2, 8, path);

		d->ks.symtab = calloc(nsyms + 1, sizeof(Elf_Sym));
		for (uint64_t s = 0; s < nsyms; s++) {
			d->ks.symtab[s].st_info = funcs[2 * s];
			d->ks.symtab[s].st_size = funcs[2 * s + 1];
		}
		free(funcs);
	}
	if (fread(magic, 8, 1, f) == 1 && !memcmp(magic, "zwmtype1", 8)) {
		d->ks.typetab = read_array(f, nsyms, 1, path);
	}
	fclose(f);

	for (uint64_t r = 0; r < d->nregions; r++) {
		if (types[r] >= MOD_MEM_NUM_TYPES) {
			fprintf(stderr, "verbatim: %s: bad region type\n", path);
			exit(2);
		}
		d->mod.mem[types[r]].base = (void *)(uintptr_t)d->region[2 * r];
		d->mod.mem[types[r]].size = d->region[2 * r + 1];
	}
	if (!d->ks.symtab)
		d->ks.symtab = calloc(nsyms + 1, sizeof(Elf_Sym));
	if (!d->ks.typetab)
		d->ks.typetab = calloc(nsyms + 1, 1);
	d->ks.num_symtab = nsyms;
	d->nameable = malloc(nsyms * 8 + 8);
	for (uint64_t s = 0; s < nsyms; s++) {
		d->ks.symtab[s].st_value = sym[2 * s];
		d->nameable[s] = sym[2 * s + 1];
		d->ks.symtab[s].st_shndx = names[2 * s];
		d->ks.symtab[s].st_name = names[2 * s + 1];
		if (names[2 * s + 1] >= strsize) {
			fprintf(stderr, "verbatim: %s: bad symbol name\n", path);
			exit(2);
		}
	}
	d->mod.kallsyms = &d->ks;
	/* Sorted as ftrace_process_locs() sorts them, remembering where from. */
	d->order = malloc(d->n * sizeof(*d->order) + 1);
	for (unsigned long i = 0; i < d->n; i++)
		d->order[i] = i;
	sort_by = d->words;
	qsort(d->order, d->n, sizeof(*d->order), cmp_index);
	sorted = malloc(d->n * sizeof(*sorted) + 1);
	for (unsigned long i = 0; i < d->n; i++)
		sorted[i] = d->words[d->order[i]];
	free(d->words);
	d->words = sorted;
	free(sym);
	free(names);
	free(types);
}

/* What ftrace_process_locs() does with the series, up to making records. */
__attribute__((noinline)) int run_candidate(struct module *mod, unsigned long *words,
					    unsigned long n)
{
	return CANDIDATE_CALL(mod, words, n);
}

#ifndef TABLE_WORD
#define TABLE_WORD 8
#endif
#if defined(FTRACE_MCOUNT_MAX_OFFSET) && !defined(STOCK_MAX_OFFSET)
#define STOCK_MAX_OFFSET FTRACE_MCOUNT_MAX_OFFSET
#endif
#ifdef STOCK_MAX_OFFSET
/*
 * Stock's answer for a record's (adjusted) @ip: kallsyms names it after
 * the closest nameable symbol at or below it in the memory region holding
 * it (*@named, 0 for none), and test_for_valid_rec() keeps the record if
 * that is at most FTRACE_MCOUNT_MAX_OFFSET below.  Brute force on purpose.
 */
static bool stock_keeps(const struct dump *d, unsigned long ip, unsigned int *named)
{
	unsigned long base = 0, best = 0;
	bool in = false, found = false;

	*named = 0;

	for (uint64_t r = 0; r < d->nregions; r++) {
		if (ip - d->region[2 * r] < d->region[2 * r + 1]) {
			base = d->region[2 * r];
			in = true;
		}
	}
	if (!in)
		return false;
	for (unsigned int s = 1; s < d->ks.num_symtab; s++) {
		unsigned long v = d->ks.symtab[s].st_value;

		if (d->nameable[s] && v <= ip && v >= base && (!found || v > best)) {
			best = v;
			found = true;
			*named = s;
		}
	}
	return found && ip - best <= STOCK_MAX_OFFSET;
}
#endif

int main(int argc, char **argv)
{
	int once = argc > 1 && !strcmp(argv[1], "-c"), status = 0;

	if (argc < 2 + once) {
		fprintf(stderr, "usage: verbatim [-c] DUMP...\n");
		return 2;
	}
	for (int a = 1 + once; a < argc; a++) {
		struct dump d;
		unsigned long *want, kept = 0, bad = 0;
		int ret;

		load(&d, argv[a]);
		want = malloc(d.n * sizeof(*want) + 1);
		memcpy(want, d.words, d.n * sizeof(*want));
		ret = d.n ? run_candidate(&d.mod, d.words, d.n) : 0;
		for (unsigned long i = 0; i < d.n; i++)
			kept += d.words[i] != 0;
#ifdef FTRACE_MCOUNT_MAX_OFFSET
		for (unsigned long i = 0; i < d.n; i++) {
			unsigned int s;

			if (!once && (d.words[i] != 0) != (want[i] && stock_keeps(&d, want[i], &s)))
				bad++;
		}
		printf("%s\t%lu\t%lu\t%s\n", d.path, d.n, kept,
		       once ? "-" : bad ? "DIFFERS from stock" : "same as stock");
#else
		printf("%s\t%lu\t%lu\t", d.path, d.n, kept);
		for (unsigned long i = 0, sep = 0; i < d.n; i++)
			if (want[i] && !d.words[i])
				printf(sep++ ? ",%#lx" : "%#lx", d.order[i] * TABLE_WORD);
		printf(shim_warnings ? "\t%lu warnings\t" : "\t\t", shim_warnings);
		shim_warnings = 0;
#ifdef STOCK_MAX_OFFSET
		for (unsigned long i = 0, sep = 0; i < d.n; i++) {
			unsigned long ip = want[i] ? ftrace_call_adjust(want[i]) : 0;
			unsigned int s;
			bool stock = ip && stock_keeps(&d, ip, &s);

			if (ip && stock != (d.words[i] != 0))
				printf("%s%c%#lx=%s+%#lx", sep++ ? "," : "", stock ? '+' : '-',
				       d.order[i] * TABLE_WORD, s ? d.ks.strtab + d.ks.symtab[s].st_name : "?",
				       ip - (s ? d.ks.symtab[s].st_value : 0));
		}
#endif
		printf("\n");
#endif
		if (bad)
			status = 1;
		(void)ret;
		free(want);
	}
	return status;
}
