/* LuaJIT structure layouts, one entry per build variant. */
#ifndef LMT_LAYOUT_H
#define LMT_LAYOUT_H

#include "luamemtrace.h"

struct lj_variant {
	const char *name;
	struct lj_layout lay;
	unsigned sizeof_L; /* sizeof(lua_State): g follows it in GG_State */
};

extern const struct lj_variant lj_variants[];
extern const unsigned lj_nvariants;

#endif
