// SPDX-License-Identifier: GPL-2.0-only
/*
 * pass.c: the candidate load-time passes of the kernel series, in user
 * space, over what dump.py wrote for real modules.
 *
 *   pass [-r REPEATS] DUMP...
 *   pass -c CANDIDATE DUMP...   one run of one candidate, for
 *                               valgrind --tool=callgrind --toggle-collect=pass_CANDIDATE
 *
 * Every candidate answers test_for_valid_rec()'s question for all of a
 * module's callsite locations at once: is there a symbol kallsyms could
 * report at most max_offset bytes before the location, in the memory
 * region that holds it?  Each keeps the locations it can explain, in
 * order, at the front of the array, as the kernel pass must.  All of them
 * are checked against "stock" (the kernel's own per-record scan) before
 * anything is timed, so a fast wrong answer cannot win.
 *
 * The code is written as kernel code would be (no libc helpers in the
 * passes, the kernel's heap sort for the one that sorts), so that the
 * winner's shape is the patch's shape.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct region { uint64_t base, size; };
struct sym { uint64_t value, nameable; };

struct module_dump {
	const char *path;
	uint64_t max_offset;
	uint64_t nregions, nsyms, nlocs;
	struct region *regions;
	struct sym *syms;
	uint64_t *locs;		/* sorted, as ftrace_process_locs() leaves them */
};

/* What a candidate cost on top of the locations array. */
static size_t extra_bytes;

static void *xalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		perror("calloc");
		exit(2);
	}
	extra_bytes += n;
	return p;
}

/* find_kallsyms_symbol()'s region: the one that holds @ip, if any. */
static int region_base(const struct module_dump *m, uint64_t ip, uint64_t *base)
{
	for (uint64_t r = 0; r < m->nregions; r++) {
		if (ip - m->regions[r].base < m->regions[r].size) {
			*base = m->regions[r].base;
			return 1;
		}
	}
	return 0;
}

static uint64_t compact(uint64_t *locs, uint64_t n, const unsigned char *keep)
{
	uint64_t kept = 0;

	for (uint64_t i = 0; i < n; i++)
		if (keep[i / 8] & (1u << (i % 8)))
			locs[kept++] = locs[i];
	memset(locs + kept, 0, (n - kept) * sizeof(*locs));
	return kept;
}

/* stock: test_for_valid_rec() per record, each a scan of every symbol. */
static uint64_t pass_stock(const struct module_dump *m, uint64_t *locs, uint64_t n)
{
	unsigned char *keep = xalloc((n + 7) / 8);

	for (uint64_t i = 0; i < n; i++) {
		uint64_t ip = locs[i], base, best = 0;
		int found = 0;

		if (!region_base(m, ip, &base))
			continue;
		for (uint64_t s = 1; s < m->nsyms; s++) {
			uint64_t v = m->syms[s].value;

			if (m->syms[s].nameable && v <= ip && v >= base && (!found || v > best)) {
				best = v;
				found = 1;
			}
		}
		if (found && ip - best <= m->max_offset)
			keep[i / 8] |= 1u << (i % 8);
	}
	return compact(locs, n, keep);
}

/* Mark what symbol value @v explains, from index @i on. */
static void mark_from(const struct module_dump *m, const uint64_t *locs, uint64_t n,
		      uint64_t i, uint64_t v, unsigned char *keep)
{
	uint64_t base;

	for (; i < n && locs[i] - v <= m->max_offset; i++)
		if (region_base(m, locs[i], &base) && base <= v)
			keep[i / 8] |= 1u << (i % 8);
}

static uint64_t first_at_or_above(const uint64_t *locs, uint64_t lo, uint64_t hi, uint64_t v)
{
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (locs[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* bsearch: per symbol, a binary search of the sorted locations; one bit each. */
static uint64_t pass_bsearch(const struct module_dump *m, uint64_t *locs, uint64_t n)
{
	unsigned char *keep = xalloc((n + 7) / 8);

	for (uint64_t s = 1; s < m->nsyms; s++) {
		uint64_t v = m->syms[s].value;

		if (m->syms[s].nameable)
			mark_from(m, locs, n, first_at_or_above(locs, 0, n, v), v, keep);
	}
	return compact(locs, n, keep);
}

/*
 * gallop: the same, but each search starts where the last one ended and
 * widens by doubling.  A module's symbol table lists each object file's
 * symbols mostly in address order, so the next answer is usually close.
 */
static uint64_t pass_gallop(const struct module_dump *m, uint64_t *locs, uint64_t n)
{
	unsigned char *keep = xalloc((n + 7) / 8);
	uint64_t at = 0;

	for (uint64_t s = 1; s < m->nsyms; s++) {
		uint64_t v = m->syms[s].value, lo, hi, step = 1;

		if (!m->syms[s].nameable)
			continue;
		if (at < n && locs[at] < v) {
			lo = at + 1;	/* answer above at */
			while (at + step < n && locs[at + step] < v) {
				lo = at + step + 1;
				step *= 2;
			}
			hi = at + step < n ? at + step : n;
		} else {
			hi = at;	/* answer at or below at */
			while (step <= at && locs[at - step] >= v) {
				hi = at - step;
				step *= 2;
			}
			lo = step <= at ? at - step + 1 : 0;
		}
		at = first_at_or_above(locs, lo, hi, v);
		mark_from(m, locs, n, at, v, keep);
	}
	return compact(locs, n, keep);
}

/* lib/sort.c's shape: an in-place heap sort, no extra memory. */
static void heap_sort(uint64_t *a, uint64_t n)
{
	for (uint64_t i = n / 2, end = n; end > 1;) {
		uint64_t root, child, t;

		if (i > 0) {
			root = --i;
		} else {
			t = a[0]; a[0] = a[--end]; a[end] = t;
			root = 0;
		}
		while ((child = 2 * root + 1) < end) {
			if (child + 1 < end && a[child + 1] > a[child])
				child++;
			if (a[root] >= a[child])
				break;
			t = a[root]; a[root] = a[child]; a[child] = t;
			root = child;
		}
	}
}

/* merge: copy and sort the symbol values, then walk both lists once. */
static uint64_t pass_merge(const struct module_dump *m, uint64_t *locs, uint64_t n)
{
	uint64_t *vals = xalloc(m->nsyms * sizeof(*vals));
	uint64_t nv = 0, j = 0, kept = 0;

	for (uint64_t s = 1; s < m->nsyms; s++)
		if (m->syms[s].nameable)
			vals[nv++] = m->syms[s].value;
	heap_sort(vals, nv);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t ip = locs[i], base;

		while (j < nv && vals[j] <= ip)
			j++;
		/* vals[j - 1] is the closest symbol at or below ip */
		if (j && region_base(m, ip, &base) && vals[j - 1] >= base &&
		    ip - vals[j - 1] <= m->max_offset)
			locs[kept++] = ip;
	}
	memset(locs + kept, 0, (n - kept) * sizeof(*locs));
	return kept;
}

static const struct {
	const char *name;
	uint64_t (*run)(const struct module_dump *, uint64_t *, uint64_t);
} candidates[] = {
	{ "stock", pass_stock },
	{ "bsearch", pass_bsearch },
	{ "gallop", pass_gallop },
	{ "merge", pass_merge },
};
#define NCAND (sizeof(candidates) / sizeof(candidates[0]))

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void *read_n(FILE *f, uint64_t *n, size_t each, const char *path)
{
	void *p;

	if (fread(n, 8, 1, f) != 1 || *n > (1u << 26))
		goto bad;
	p = malloc(*n * each + 1);
	if (!p || fread(p, each, *n, f) != *n)
		goto bad;
	return p;
bad:
	fprintf(stderr, "pass: %s: not a dump.py file\n", path);
	exit(2);
}

static void load(struct module_dump *m, const char *path)
{
	FILE *f = fopen(path, "rb");
	char magic[8];

	if (!f || fread(magic, 8, 1, f) != 1 || memcmp(magic, "zwmpass1", 8) ||
	    fread(&m->max_offset, 8, 1, f) != 1) {
		fprintf(stderr, "pass: %s: not a dump.py file\n", path);
		exit(2);
	}
	m->path = path;
	m->regions = read_n(f, &m->nregions, sizeof(struct region), path);
	m->syms = read_n(f, &m->nsyms, sizeof(struct sym), path);
	m->locs = read_n(f, &m->nlocs, 8, path);
	fclose(f);
	qsort(m->locs, m->nlocs, 8, cmp_u64);
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One candidate, once per dump, nothing else: what callgrind counts. */
static int run_one(const char *name, int ndumps, char **dumps)
{
	for (size_t c = 0; c < NCAND; c++) {
		if (strcmp(candidates[c].name, name))
			continue;
		for (int a = 0; a < ndumps; a++) {
			struct module_dump m;

			load(&m, dumps[a]);
			printf("%s\t%s\t%llu kept\n", dumps[a], name,
			       (unsigned long long)candidates[c].run(&m, m.locs, m.nlocs));
		}
		return 0;
	}
	fprintf(stderr, "pass: no candidate %s\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	int repeats = 21, first = 1, status = 0;

	if (argc > 2 && !strcmp(argv[1], "-c"))
		return run_one(argv[2], argc - 3, argv + 3);
	if (argc > 2 && !strcmp(argv[1], "-r")) {
		repeats = atoi(argv[2]);
		first = 3;
	}
	if (first >= argc || repeats < 1) {
		fprintf(stderr, "usage: pass [-r REPEATS] DUMP... | pass -c CANDIDATE DUMP...\n");
		return 2;
	}
	printf("module\tlocations\tsymbols\tkept\tcandidate\tmedian_us\tmin_us\tmax_us\textra_bytes\n");
	for (int a = first; a < argc; a++) {
		struct module_dump m;
		uint64_t *want, *work, kept_stock;

		load(&m, argv[a]);
		want = malloc(m.nlocs * 8 + 8);
		work = malloc(m.nlocs * 8 + 8);
		memcpy(want, m.locs, m.nlocs * 8);
		kept_stock = pass_stock(&m, want, m.nlocs);
		for (size_t c = 0; c < NCAND; c++) {
			int reps = c == 0 ? (repeats < 3 ? repeats : 3) : repeats;
			double *t = malloc(reps * sizeof(*t));
			uint64_t kept = 0;

			for (int r = 0; r < reps; r++) {
				double t0;

				memcpy(work, m.locs, m.nlocs * 8);
				extra_bytes = 0;
				t0 = now_us();
				kept = candidates[c].run(&m, work, m.nlocs);
				t[r] = now_us() - t0;
				if (kept != kept_stock || memcmp(work, want, m.nlocs * 8)) {
					fprintf(stderr, "pass: %s: %s disagrees with stock (%llu kept, stock %llu)\n",
						m.path, candidates[c].name, (unsigned long long)kept,
						(unsigned long long)kept_stock);
					status = 1;
					break;
				}
			}
			qsort(t, reps, sizeof(*t), cmp_double);
			printf("%s\t%llu\t%llu\t%llu\t%s\t%.1f\t%.1f\t%.1f\t%zu\n", m.path,
			       (unsigned long long)m.nlocs, (unsigned long long)m.nsyms,
			       (unsigned long long)kept, candidates[c].name, t[reps / 2], t[0],
			       t[reps - 1], extra_bytes);
			free(t);
		}
		free(want);
		free(work);
	}
	return status;
}
