/* A host program embedding libluajit, as applications do:
 *   host FILE.lua         one VM with the host's own allocator (lua_newstate)
 *   host -t N FILE.lua    N threads, one VM each (luaL_newstate, LuaJIT's
 *                         allocator), like sysbench
 *   host -s FILE.lua...   one VM per file, one after another, each closed
 *                         before the next starts (its memory gets reused)
 *   host -2 A.lua B.lua N two VMs with the host's allocator (one malloc heap,
 *                         two uds) in one thread: each file defines step(),
 *                         called N times in A, then in B, alternately */
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

static void *thread_main(void *file)
{
	lua_State *L = luaL_newstate();
	return (void *)(long)(L ? run(L, file) : 1);
}

int main(int argc, char **argv)
{
	lua_State *L;

	if (argc == 4 && !strcmp(argv[1], "-t")) {
		int n = atoi(argv[2]), bad = 0;
		pthread_t th[64];
		if (n < 1 || n > 64)
			return 2;
		for (int i = 0; i < n; i++)
			pthread_create(&th[i], NULL, thread_main, argv[3]);
		for (int i = 0; i < n; i++) {
			void *r;
			pthread_join(th[i], &r);
			bad |= r != NULL;
		}
		return bad;
	}
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
		fprintf(stderr, "usage: host [-t N] FILE.lua | host -s FILE.lua... | "
			"host -2 A.lua B.lua N\n");
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
