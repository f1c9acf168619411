/* A Lua C module for the late-module test (tests/faults.bats):
 *   local m = require("lmtmod"); m.make(n)
 * creates n tables from C, so each allocation is charged to the C function
 * lmtmod_make (exported, so the module's symbols name it).
 *   m.ref(v)
 * holds v in the registry with luaL_ref (tests/heap.bats: registry[N]). */
#include <lauxlib.h>
#include <lua.h>

int lmtmod_make(lua_State *L);
int lmtmod_ref(lua_State *L);
int luaopen_lmtmod(lua_State *L);

int lmtmod_make(lua_State *L)
{
	lua_Integer n = luaL_checkinteger(L, 1);

	for (lua_Integer i = 0; i < n; i++) {
		lua_createtable(L, 0, 0); /* one allocation: no hash part */
		lua_pop(L, 1);
	}
	return 0;
}

int lmtmod_ref(lua_State *L)
{
	lua_settop(L, 1);
	lua_pushinteger(L, luaL_ref(L, LUA_REGISTRYINDEX));
	return 1;
}

int luaopen_lmtmod(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "make", lmtmod_make },
		{ "ref", lmtmod_ref },
		{ NULL, NULL },
	};

	lua_newtable(L);
	luaL_register(L, NULL, fns);
	return 1;
}
