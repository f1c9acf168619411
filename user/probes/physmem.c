/* The machine's physical memory (probes/physmem.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/physmem.h"

unsigned physmem_bits(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	unsigned bits = 0;
	int la57 = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "flags", 5) && strstr(line, " la57"))
			la57 = 1;
		if (!bits && !strncmp(line, "address sizes", 13)) {
			const char *c = strchr(line, ':');

			if (c)
				bits = (unsigned)strtoul(c + 1, NULL, 10);
		}
	}
	fclose(f);
	return la57 || bits < 32 || bits > 52 ? 0 : bits;
}

uint64_t physmem_top(void)
{
	FILE *f = fopen("/proc/iomem", "r");
	char line[256];
	uint64_t top = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;

		if (line[0] != ' ' && strstr(line, ": System RAM") &&
		    sscanf(line, "%llx-%llx", &lo, &hi) == 2 && hi + 1 > top)
			top = hi + 1;
	}
	fclose(f);
	return top;
}

