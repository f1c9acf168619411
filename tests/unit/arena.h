/* The target of a unit test that forges VM structures: one arena of this
 * process, in which every forged structure is and nothing else is
 * readable. zalloc carves it (16-byte aligned, zeroed); proc_read and
 * proc_read_some read it as target/proc.c reads a process (so the test
 * links no proc.c), and count their calls in reads. ARENA (bytes) may be set before including
 * it; included by one file of a test. */
#ifndef LMT_UNIT_ARENA_H
#define LMT_UNIT_ARENA_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#ifndef ARENA
#define ARENA (64u << 20)
#endif
static uint8_t *arena;
static size_t used;
static uint64_t reads;

static void *zalloc(size_t n)
{
	void *p;

	if (!arena)
		arena = calloc(1, ARENA);
	if (!arena || used + n > ARENA) {
		fprintf(stderr, "arena full\n");
		exit(2);
	}
	p = arena + used;
	used += (n + 15) & ~(size_t)15;
	return p;
}

static int readable(uint64_t addr, size_t len)
{
	return addr >= (uintptr_t)arena && addr <= (uintptr_t)arena + used &&
	       len <= (uintptr_t)arena + used - addr;
}

int proc_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	reads++;
	if (!readable(addr, len))
		return -EFAULT;
	memcpy(buf, (void *)(uintptr_t)addr, len);
	return 0;
}

/* proc_read_some's: what of [addr, addr + len) the arena holds, from addr
 * (at least its first byte), as a partial read of a process. */
ssize_t proc_read_some(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t n;

	if (!readable(addr, 1))
		return -EFAULT;
	reads++;
	n = (uintptr_t)arena + used - addr < len ? (uintptr_t)arena + used - addr : len;
	memcpy(buf, (void *)(uintptr_t)addr, n);
	return (ssize_t)n;
}

#endif
