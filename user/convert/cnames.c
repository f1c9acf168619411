/* C functions by the names Lua code gives them (convert/cnames.h). */
#include <stdio.h>
#include <string.h>

#include "convert/conv.h"
#include "streams/out.h"
#include "util/clock.h"
#include "convert/cnames.h"
#include "convert/luanames.h"
#include "target/caps.h"

/* The target's tables are read again when a function they did not
 * name appears: at once for one not seen before (a module just loaded),
 * up to LMT_NAMES_MISSED_MAX of them; the ones they did not name wait for
 * the next walk, at most one every LMT_NAMES_REWALK_S (target/caps.h). */
const char *lua_name(struct conv_vm *v, uint64_t key)
{
	const char *n = u64map_get(&v->cnames, key);

	if (n || !v->var ||
	    ((u64set_has(&v->cmissed, key) || v->cmissed.n >= LMT_NAMES_MISSED_MAX) &&
	     now() - v->cnames_at < LMT_NAMES_REWALK_S))
		return n;
	v->cnames_at = now();
	v->p->nm_walks++;
	if (luanames_read(v->p->pid, v->var, v->g, &v->cnames, &v->p->nm_nodes) > 0)
		v->p->nm_cut++;
	n = u64map_get(&v->cnames, key);
	if (!n && v->cmissed.n < LMT_NAMES_MISSED_MAX)
		u64set_add(&v->cmissed, key);
	return n;
}

/* A C function by the name Lua code gives it (convert/luanames.h), beside the
 * stream's ELF name: "cjson.encode (liblua5.1-cjson.so+0x3cc0)". */
void cfunc_name(struct conv_vm *v, uint64_t f)
{
	const char *n, *elf;
	char buf[512];

	if (u64set_has(&v->cnamed, f) || !(n = lua_name(v, f)))
		return;
	u64set_add(&v->cnamed, f);
	elf = syms_name(&v->p->syms, f);
	snprintf(buf, sizeof(buf), elf ? "%s (%s)" : "%s", n, elf);
	out_sym(v->out, &(struct mp_sym){ .kind = MP_SYM_CFUNC, .addr = f,
					  .name = buf, .name_len = strlen(buf) });
}
