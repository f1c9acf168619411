/* The names Lua functions are called by, as LuaJIT's debug.traceback and
 * debug.getinfo(f, "n") tell them (lj_debug_funcname): a property of the
 * CALLER's prototype and position, read from its bytecode (walking back
 * to the instruction that loaded the called slot), its constants, its
 * upvalues' and locals' names. Shown the way Lua's traceback says it:
 * "function 'render'" (a global), "method 'add'", "field 'handler'",
 * "upvalue 'parse'", "local 'f'", "metamethod '__index'". Read from the
 * target once per call site and cached per prototype (a prototype's
 * record drops its entry: fnames_forget). */
#ifndef LMT_FNAMES_H
#define LMT_FNAMES_H

#include <stdint.h>

struct conv_vm;

/* The name the function called from prototype pt is given, its caller's
 * PC pc being the frame's link (a return PC, the instruction after the
 * call; a continuation's PC, the instruction after the one that called a
 * metamethod). NULL if LuaJIT gives none or it cannot be read. */
const char *fname_at(struct conv_vm *v, uint64_t pt, uint64_t pc);
/* A call from pt at line to prototype callee gave it name (NULL: none),
 * as the interpreter's stack showed it (fname_at). */
void fname_learn(struct conv_vm *v, uint64_t pt, uint64_t line, uint64_t callee,
		 const char *name);
/* The same where only the caller's line is known (a frame a trace
 * inlined, prototype callee): the name the interpreter showed for that
 * call (fname_learn), if one name; else the name the calls of pt at that
 * line all give; NULL if they give different ones, or none. */
const char *fname_at_line(struct conv_vm *v, uint64_t pt, uint64_t line, uint64_t callee);
/* Prototype pt is (again) a new one: its names go. */
void fnames_forget(struct conv_vm *v, uint64_t pt);
void fnames_free(struct conv_vm *v);

#endif
