/* A host program embedding libluajit with its own allocator, as
 * applications that pass lua_newstate() a custom allocf do. Runs the Lua
 * file given as argument. */
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
	lua_State *L;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: host FILE.lua\n");
		return 2;
	}
	L = lua_newstate(host_alloc, &live);
	if (!L) {
		fprintf(stderr, "host: lua_newstate failed (a 64-bit LuaJIT "
			"without GC64 refuses custom allocators)\n");
		return 1;
	}
	luaL_openlibs(L);
	r = luaL_dofile(L, argv[1]);
	if (r)
		fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
	lua_close(L);
	return r ? 1 : 0;
}
