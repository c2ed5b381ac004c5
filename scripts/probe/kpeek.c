// SPDX-License-Identifier: GPL-2.0-only
/*
 * kpeek: print the instruction bytes at kernel addresses, read from
 * /proc/kcore (an ELF core file whose PT_LOAD segments map kernel virtual
 * addresses, module space included).  The probe guest uses it to see
 * which patch site ftrace rewrote when a probe was enabled: the function's
 * own, or the dead weak body's after it (scripts/probe/probe.py).
 *
 * Usage: kpeek HEXADDR...   prints "KPEEK ADDR BYTES" (8 bytes, hex), or
 * "KPEEK ADDR error ..." for an address no segment maps.
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	Elf64_Ehdr eh;
	int fd = open("/proc/kcore", O_RDONLY), i, j;

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64) {
		printf("KPEEK error: cannot read /proc/kcore\n");
		return 1;
	}
	Elf64_Phdr *ph = calloc(eh.e_phnum, sizeof(*ph));

	if (pread(fd, ph, eh.e_phnum * sizeof(*ph), eh.e_phoff) != (ssize_t)(eh.e_phnum * sizeof(*ph))) {
		printf("KPEEK error: cannot read the program headers\n");
		return 1;
	}
	for (i = 1; i < argc; i++) {
		uint64_t a = strtoull(argv[i], NULL, 16);
		unsigned char b[8];
		int done = 0;

		for (j = 0; j < eh.e_phnum && !done; j++) {
			if (ph[j].p_type != PT_LOAD || a < ph[j].p_vaddr || a + 8 > ph[j].p_vaddr + ph[j].p_memsz)
				continue;
			if (pread(fd, b, 8, ph[j].p_offset + (a - ph[j].p_vaddr)) == 8) {
				printf("KPEEK %llx %02x%02x%02x%02x%02x%02x%02x%02x\n", (unsigned long long)a,
				       b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]);
				done = 1;
			}
		}
		if (!done)
			printf("KPEEK %llx error\n", (unsigned long long)a);
	}
	return 0;
}
