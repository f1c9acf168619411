/* The names Lua code gives C functions: a module's functions by the name
 * it is loaded under (package.loaded: cjson.encode, ngx.say, a host's
 * lmtmod.make, a global's name), read from the target's tables; the FFI's
 * cdata metamethods as ffi.meta.__index (as LuaJIT's jit/vmdef.lua). */
#ifndef LMT_LUANAMES_H
#define LMT_LUANAMES_H

#include <stdint.h>
#include <sys/types.h>

#include "target/layout.h"
#include "util/u64set.h"

/* Reads VM g's package.loaded: each C function reachable as MOD.KEY (or
 * MOD.SUB.KEY, or a global's KEY) into names (address -> malloc'd name;
 * a builtin, by LUANAMES_FF(its ffid)), the first name found kept; the
 * hash nodes read added to *nodes. 0; 1 if tables were left out, the
 * walk's budget spent (target/caps.h); -1 if the tables cannot be read. */
#define LUANAMES_FF(ffid) (1ULL << 63 | (ffid))

int luanames_read(pid_t pid, const struct lj_variant *var, uint64_t g,
		  struct u64map *names, uint64_t *nodes);

/* Whether build d's fast function names (target/vmdef.h) contradict
 * names, package.loaded's as luanames_read keeps them: a builtin found
 * under a name d gives another ffid (a build the variant does not
 * describe). 1 if so, else 0. */
int luanames_ffbad(const struct u64map *names, const struct lj_vmdef *d);

#endif
