/* A host program embedding libluajit, as applications do:
 *   host FILE.lua         one VM with the host's own allocator (lua_newstate)
 *   host -t N FILE.lua    N threads, one VM each (luaL_newstate, LuaJIT's
 *                         allocator), like sysbench: every VM lives until
 *                         all have run FILE (no VM gets another's memory)
 *   host -s FILE.lua...   one VM per file, one after another, each closed
 *                         before the next starts (its memory gets reused)
 *   host -2 A.lua B.lua N two VMs with the host's allocator (one malloc heap,
 *                         two uds) in one thread: each file defines step(),
 *                         called N times in A, then in B, alternately
 *   host -c N FILE.lua    N threads (N <= 64) that wait on a barrier, then
 *                         each creates its VM at the same moment with
 *                         lua_newstate and a counting allocator of its own;
 *                         prints "calls: A alloc R realloc F free", the
 *                         allocator calls of every VM between lua_newstate's
 *                         return and lua_close, classified as the tracer
 *                         does (nsize 0: free, else ptr NULL: alloc, else
 *                         realloc) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

static size_t live;

static void *host_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	(void)ud;
	if (nsize == 0) {
		if (ptr)
			live -= osize;
		free(ptr);
		return NULL;
	}
	ptr = realloc(ptr, nsize);
	if (ptr)
		live += nsize - (ptr ? osize : 0);
	return ptr;
}

/* -c: one counter per VM, its calls counted only while it is "open"
 * (after lua_newstate returned, before lua_close is called). */
struct counter {
	int open;
	unsigned long alloc, realloc, free;
};

static void *count_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct counter *c = ud;

	(void)osize;
	if (c->open) {
		if (nsize == 0)
			c->free++;
		else if (ptr == NULL)
			c->alloc++;
		else
			c->realloc++;
	}
	if (nsize == 0) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, nsize);
}

static pthread_barrier_t barrier;

struct cthread {
	pthread_t th;
	const char *file;
	struct counter c;
	int r;
};

static void *count_main(void *arg)
{
	struct cthread *ct = arg;
	lua_State *L;

	pthread_barrier_wait(&barrier);
	L = lua_newstate(count_alloc, &ct->c);
	if (!L) {
		ct->r = 1;
		return NULL;
	}
	ct->c.open = 1;
	luaL_openlibs(L);
	ct->r = luaL_dofile(L, ct->file);
	if (ct->r)
		fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
	ct->c.open = 0;
	lua_close(L);
	return NULL;
}

static int count_vms(int n, const char *file)
{
	static struct cthread ct[64];
	unsigned long a = 0, r = 0, f = 0;
	int bad = 0;

	if (n < 1 || n > 64)
		return 2;
	pthread_barrier_init(&barrier, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		ct[i].file = file;
		if (pthread_create(&ct[i].th, NULL, count_main, &ct[i])) {
			fprintf(stderr, "host: cannot create thread %d\n", i);
			exit(1);
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(ct[i].th, NULL);
		bad |= ct[i].r != 0;
		a += ct[i].c.alloc;
		r += ct[i].c.realloc;
		f += ct[i].c.free;
	}
	pthread_barrier_destroy(&barrier);
	printf("calls: %lu alloc %lu realloc %lu free\n", a, r, f);
	return bad;
}

static int run(lua_State *L, const char *file)
{
	int r;

	luaL_openlibs(L);
	r = luaL_dofile(L, file);
	if (r)
		fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
	lua_close(L);
	return r;
}

static pthread_barrier_t alive;

static void *thread_main(void *file)
{
	lua_State *L = luaL_newstate();
	int r = 1;

	if (L) {
		luaL_openlibs(L);
		if ((r = luaL_dofile(L, file)))
			fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
	}
	pthread_barrier_wait(&alive);
	if (L)
		lua_close(L);
	return (void *)(long)r;
}

int main(int argc, char **argv)
{
	lua_State *L;

	if (argc == 4 && !strcmp(argv[1], "-t")) {
		int n = atoi(argv[2]), bad = 0;
		pthread_t th[64];
		if (n < 1 || n > 64)
			return 2;
		pthread_barrier_init(&alive, NULL, (unsigned)n);
		for (int i = 0; i < n; i++)
			if (pthread_create(&th[i], NULL, thread_main, argv[3]))
				return 1;
		for (int i = 0; i < n; i++) {
			void *r;
			pthread_join(th[i], &r);
			bad |= r != NULL;
		}
		return bad;
	}
	if (argc == 4 && !strcmp(argv[1], "-c"))
		return count_vms(atoi(argv[2]), argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "-s")) {
		for (int i = 2; i < argc; i++) {
			L = luaL_newstate();
			if (!L || run(L, argv[i]))
				return 1;
		}
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "-2")) {
		static char ud[2];
		lua_State *V[2];
		int n = atoi(argv[4]);
		for (int i = 0; i < 2; i++) {
			V[i] = lua_newstate(host_alloc, &ud[i]);
			if (!V[i])
				return 1;
			luaL_openlibs(V[i]);
			if (luaL_dofile(V[i], argv[2 + i])) {
				fprintf(stderr, "host: %s\n", lua_tostring(V[i], -1));
				return 1;
			}
		}
		for (int k = 0; k < n; k++)
			for (int i = 0; i < 2; i++) {
				lua_getglobal(V[i], "step");
				lua_call(V[i], 0, 0);
			}
		lua_close(V[0]);
		lua_close(V[1]);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: host [-t N] FILE.lua | host -c N FILE.lua | "
			"host -s FILE.lua... | host -2 A.lua B.lua N\n");
		return 2;
	}
	L = lua_newstate(host_alloc, &live);
	if (!L) {
		fprintf(stderr, "host: lua_newstate failed (a 64-bit LuaJIT "
			"without GC64 refuses custom allocators)\n");
		return 1;
	}
	return run(L, argv[1]) ? 1 : 0;
}
