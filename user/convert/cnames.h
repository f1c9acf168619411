/* C functions by the names Lua code gives them (convert/luanames.h reads
 * the target's tables), per VM, for the stream and for stacks. */
#ifndef LMT_CNAMES_H
#define LMT_CNAMES_H

#include "convert/conv.h"

/* The name Lua code gives C function or builtin key, or NULL; the target's
 * tables read again, within the caps of target/caps.h, for a function
 * they did not name. */
const char *lua_name(struct conv_vm *v, uint64_t key);
/* C function f's Lua name into v's stream (beside its ELF name), once,
 * if its tables give one. */
void cfunc_name(struct conv_vm *v, uint64_t f);

#endif
