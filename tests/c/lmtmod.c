/* A Lua C module for the late-module test (tests/faults.bats):
 *   local m = require("lmtmod"); m.make(n)
 * creates n tables from C, so each allocation is charged to the C function
 * lmtmod_make (exported, so the module's symbols name it). */
#include <lauxlib.h>
#include <lua.h>

int lmtmod_make(lua_State *L);
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

int luaopen_lmtmod(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{ "make", lmtmod_make },
		{ NULL, NULL },
	};

	lua_newtable(L);
	luaL_register(L, NULL, fns);
	return 1;
}
