/* jit/vmdef.lua's and lj_bc.h's facts per build (target/vmdef.h). The
 * ffnames are vmdef.lua's, as each build's own package installs it
 * (libluajit-5.1-common's and libluajit2-5.1-common's
 * /usr/share/luajit-2.1.0-beta3/jit/vmdef.lua), index for index; the
 * bytecode modes are lj_bc.h's BCDEF of the same sources (both builds
 * have the same 97 opcodes, vmdef.lua's bcnames). */
#include <string.h>

#include "target/vmdef.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* -- Bytecode (lj_bc.h BCDEF: A's mode, the metamethod) ------------------- */

static const struct lj_bcdef bc21[] = {
	/* ISLT   */ { LJ_BCA_OTHER, "__lt" },
	/* ISGE   */ { LJ_BCA_OTHER, "__lt" },
	/* ISLE   */ { LJ_BCA_OTHER, "__le" },
	/* ISGT   */ { LJ_BCA_OTHER, "__le" },
	/* ISEQV  */ { LJ_BCA_OTHER, "__eq" },
	/* ISNEV  */ { LJ_BCA_OTHER, "__eq" },
	/* ISEQS  */ { LJ_BCA_OTHER, "__eq" },
	/* ISNES  */ { LJ_BCA_OTHER, "__eq" },
	/* ISEQN  */ { LJ_BCA_OTHER, "__eq" },
	/* ISNEN  */ { LJ_BCA_OTHER, "__eq" },
	/* ISEQP  */ { LJ_BCA_OTHER, "__eq" },
	/* ISNEP  */ { LJ_BCA_OTHER, "__eq" },
	/* ISTC   */ { LJ_BCA_DST, NULL },
	/* ISFC   */ { LJ_BCA_DST, NULL },
	/* IST    */ { LJ_BCA_OTHER, NULL },
	/* ISF    */ { LJ_BCA_OTHER, NULL },
	/* ISTYPE */ { LJ_BCA_OTHER, NULL },
	/* ISNUM  */ { LJ_BCA_OTHER, NULL },
	/* MOV    */ { LJ_BCA_DST, NULL },
	/* NOT    */ { LJ_BCA_DST, NULL },
	/* UNM    */ { LJ_BCA_DST, "__unm" },
	/* LEN    */ { LJ_BCA_DST, "__len" },
	/* ADDVN  */ { LJ_BCA_DST, "__add" },
	/* SUBVN  */ { LJ_BCA_DST, "__sub" },
	/* MULVN  */ { LJ_BCA_DST, "__mul" },
	/* DIVVN  */ { LJ_BCA_DST, "__div" },
	/* MODVN  */ { LJ_BCA_DST, "__mod" },
	/* ADDNV  */ { LJ_BCA_DST, "__add" },
	/* SUBNV  */ { LJ_BCA_DST, "__sub" },
	/* MULNV  */ { LJ_BCA_DST, "__mul" },
	/* DIVNV  */ { LJ_BCA_DST, "__div" },
	/* MODNV  */ { LJ_BCA_DST, "__mod" },
	/* ADDVV  */ { LJ_BCA_DST, "__add" },
	/* SUBVV  */ { LJ_BCA_DST, "__sub" },
	/* MULVV  */ { LJ_BCA_DST, "__mul" },
	/* DIVVV  */ { LJ_BCA_DST, "__div" },
	/* MODVV  */ { LJ_BCA_DST, "__mod" },
	/* POW    */ { LJ_BCA_DST, "__pow" },
	/* CAT    */ { LJ_BCA_DST, "__concat" },
	/* KSTR   */ { LJ_BCA_DST, NULL },
	/* KCDATA */ { LJ_BCA_DST, NULL },
	/* KSHORT */ { LJ_BCA_DST, NULL },
	/* KNUM   */ { LJ_BCA_DST, NULL },
	/* KPRI   */ { LJ_BCA_DST, NULL },
	/* KNIL   */ { LJ_BCA_BASE, NULL },
	/* UGET   */ { LJ_BCA_DST, NULL },
	/* USETV  */ { LJ_BCA_OTHER, NULL },
	/* USETS  */ { LJ_BCA_OTHER, NULL },
	/* USETN  */ { LJ_BCA_OTHER, NULL },
	/* USETP  */ { LJ_BCA_OTHER, NULL },
	/* UCLO   */ { LJ_BCA_OTHER, NULL },
	/* FNEW   */ { LJ_BCA_DST, "__gc" },
	/* TNEW   */ { LJ_BCA_DST, "__gc" },
	/* TDUP   */ { LJ_BCA_DST, "__gc" },
	/* GGET   */ { LJ_BCA_DST, "__index" },
	/* GSET   */ { LJ_BCA_OTHER, "__newindex" },
	/* TGETV  */ { LJ_BCA_DST, "__index" },
	/* TGETS  */ { LJ_BCA_DST, "__index" },
	/* TGETB  */ { LJ_BCA_DST, "__index" },
	/* TGETR  */ { LJ_BCA_DST, "__index" },
	/* TSETV  */ { LJ_BCA_OTHER, "__newindex" },
	/* TSETS  */ { LJ_BCA_OTHER, "__newindex" },
	/* TSETB  */ { LJ_BCA_OTHER, "__newindex" },
	/* TSETM  */ { LJ_BCA_BASE, "__newindex" },
	/* TSETR  */ { LJ_BCA_OTHER, "__newindex" },
	/* CALLM  */ { LJ_BCA_BASE, LJ_BC_CALL },
	/* CALL   */ { LJ_BCA_BASE, LJ_BC_CALL },
	/* CALLMT */ { LJ_BCA_BASE, LJ_BC_CALL },
	/* CALLT  */ { LJ_BCA_BASE, LJ_BC_CALL },
	/* ITERC  */ { LJ_BCA_BASE, LJ_BC_CALL },
	/* ITERN  */ { LJ_BCA_BASE, LJ_BC_CALL },
	/* VARG   */ { LJ_BCA_BASE, NULL },
	/* ISNEXT */ { LJ_BCA_BASE, NULL },
	/* RETM   */ { LJ_BCA_BASE, NULL },
	/* RET    */ { LJ_BCA_OTHER, NULL },
	/* _(RET0, */ { LJ_BCA_OTHER, "_____," },
	/* _(RET1, */ { LJ_BCA_OTHER, "_____," },
	/* FORI   */ { LJ_BCA_BASE, NULL },
	/* JFORI  */ { LJ_BCA_BASE, NULL },
	/* FORL   */ { LJ_BCA_BASE, NULL },
	/* IFORL  */ { LJ_BCA_BASE, NULL },
	/* JFORL  */ { LJ_BCA_BASE, NULL },
	/* ITERL  */ { LJ_BCA_BASE, NULL },
	/* IITERL */ { LJ_BCA_BASE, NULL },
	/* JITERL */ { LJ_BCA_BASE, NULL },
	/* LOOP   */ { LJ_BCA_OTHER, NULL },
	/* ILOOP  */ { LJ_BCA_OTHER, NULL },
	/* JLOOP  */ { LJ_BCA_OTHER, NULL },
	/* JMP    */ { LJ_BCA_OTHER, NULL },
	/* FUNCF  */ { LJ_BCA_OTHER, NULL },
	/* IFUNCF */ { LJ_BCA_OTHER, NULL },
	/* JFUNCF */ { LJ_BCA_OTHER, NULL },
	/* FUNCV  */ { LJ_BCA_OTHER, NULL },
	/* IFUNCV */ { LJ_BCA_OTHER, NULL },
	/* JFUNCV */ { LJ_BCA_OTHER, NULL },
	/* FUNCC  */ { LJ_BCA_OTHER, NULL },
	/* FUNCCW */ { LJ_BCA_OTHER, NULL },
};

/* -- Fast functions (vmdef.lua ffnames) ----------------------------------- */

/* Debian's luajit (LuaJIT 2.1.0~beta3+git20220320). */
static const char *const ff_lj21[] = {
	"Lua", "C", "assert", "type", "next", "pairs", "ipairs_aux", "ipairs",
	"getmetatable", "setmetatable", "getfenv", "setfenv", "rawget", "rawset",
	"rawequal", "unpack", "select", "tonumber", "tostring", "error", "pcall",
	"xpcall", "loadfile", "load", "loadstring", "dofile", "gcinfo",
	"collectgarbage", "newproxy", "print", "coroutine.status", "coroutine.running",
	"coroutine.isyieldable", "coroutine.create", "coroutine.yield",
	"coroutine.resume", "coroutine.wrap_aux", "coroutine.wrap", "math.abs",
	"math.floor", "math.ceil", "math.sqrt", "math.log10", "math.exp", "math.sin",
	"math.cos", "math.tan", "math.asin", "math.acos", "math.atan", "math.sinh",
	"math.cosh", "math.tanh", "math.frexp", "math.modf", "math.log", "math.atan2",
	"math.pow", "math.fmod", "math.ldexp", "math.min", "math.max", "math.random",
	"math.randomseed", "bit.tobit", "bit.bnot", "bit.bswap", "bit.lshift",
	"bit.rshift", "bit.arshift", "bit.rol", "bit.ror", "bit.band", "bit.bor",
	"bit.bxor", "bit.tohex", "string.byte", "string.char", "string.sub",
	"string.rep", "string.reverse", "string.lower", "string.upper", "string.dump",
	"string.find", "string.match", "string.gmatch_aux", "string.gmatch",
	"string.gsub", "string.format", "table.maxn", "table.insert", "table.concat",
	"table.sort", "table.new", "table.clear", "io.method.close", "io.method.read",
	"io.method.write", "io.method.flush", "io.method.seek", "io.method.setvbuf",
	"io.method.lines", "io.method.__gc", "io.method.__tostring", "io.open",
	"io.popen", "io.tmpfile", "io.close", "io.read", "io.write", "io.flush",
	"io.input", "io.output", "io.lines", "io.type", "os.execute", "os.remove",
	"os.rename", "os.tmpname", "os.getenv", "os.exit", "os.clock", "os.date",
	"os.time", "os.difftime", "os.setlocale", "debug.getregistry",
	"debug.getmetatable", "debug.setmetatable", "debug.getfenv", "debug.setfenv",
	"debug.getinfo", "debug.getlocal", "debug.setlocal", "debug.getupvalue",
	"debug.setupvalue", "debug.upvalueid", "debug.upvaluejoin", "debug.sethook",
	"debug.gethook", "debug.debug", "debug.traceback", "jit.on", "jit.off",
	"jit.flush", "jit.status", "jit.security", "jit.attach", "jit.util.funcinfo",
	"jit.util.funcbc", "jit.util.funck", "jit.util.funcuvname",
	"jit.util.traceinfo", "jit.util.traceir", "jit.util.tracek",
	"jit.util.tracesnap", "jit.util.tracemc", "jit.util.traceexitstub",
	"jit.util.ircalladdr", "jit.opt.start", "jit.profile.start",
	"jit.profile.stop", "jit.profile.dumpstack", "ffi.meta.__index",
	"ffi.meta.__newindex", "ffi.meta.__eq", "ffi.meta.__len", "ffi.meta.__lt",
	"ffi.meta.__le", "ffi.meta.__concat", "ffi.meta.__call", "ffi.meta.__add",
	"ffi.meta.__sub", "ffi.meta.__mul", "ffi.meta.__div", "ffi.meta.__mod",
	"ffi.meta.__pow", "ffi.meta.__unm", "ffi.meta.__tostring", "ffi.meta.__pairs",
	"ffi.meta.__ipairs", "ffi.clib.__index", "ffi.clib.__newindex",
	"ffi.clib.__gc", "ffi.callback.free", "ffi.callback.set", "ffi.cdef",
	"ffi.new", "ffi.cast", "ffi.typeof", "ffi.typeinfo", "ffi.istype",
	"ffi.sizeof", "ffi.alignof", "ffi.offsetof", "ffi.errno", "ffi.string",
	"ffi.copy", "ffi.fill", "ffi.abi", "ffi.metatype", "ffi.gc", "ffi.load",
	"buffer.method.free", "buffer.method.reset", "buffer.method.skip",
	"buffer.method.set", "buffer.method.put", "buffer.method.putf",
	"buffer.method.get", "buffer.method.putcdata", "buffer.method.reserve",
	"buffer.method.commit", "buffer.method.ref", "buffer.method.encode",
	"buffer.method.decode", "buffer.method.__gc", "buffer.method.__tostring",
	"buffer.method.__len", "buffer.new", "buffer.encode", "buffer.decode",
};

/* Debian's luajit2 (OpenResty's LuaJIT 2.1-20230119): thread.exdata and
 * thread.exdata2 at 38 and 39, table.clone, table.isarray, table.nkeys,
 * table.isempty after table.concat, jit.prngstate after jit.attach. */
static const char *const ff_or21[] = {
	"Lua", "C", "assert", "type", "next", "pairs", "ipairs_aux", "ipairs",
	"getmetatable", "setmetatable", "getfenv", "setfenv", "rawget", "rawset",
	"rawequal", "unpack", "select", "tonumber", "tostring", "error", "pcall",
	"xpcall", "loadfile", "load", "loadstring", "dofile", "gcinfo",
	"collectgarbage", "newproxy", "print", "coroutine.status", "coroutine.running",
	"coroutine.isyieldable", "coroutine.create", "coroutine.yield",
	"coroutine.resume", "coroutine.wrap_aux", "coroutine.wrap", "thread.exdata",
	"thread.exdata2", "math.abs", "math.floor", "math.ceil", "math.sqrt",
	"math.log10", "math.exp", "math.sin", "math.cos", "math.tan", "math.asin",
	"math.acos", "math.atan", "math.sinh", "math.cosh", "math.tanh", "math.frexp",
	"math.modf", "math.log", "math.atan2", "math.pow", "math.fmod", "math.ldexp",
	"math.min", "math.max", "math.random", "math.randomseed", "bit.tobit",
	"bit.bnot", "bit.bswap", "bit.lshift", "bit.rshift", "bit.arshift", "bit.rol",
	"bit.ror", "bit.band", "bit.bor", "bit.bxor", "bit.tohex", "string.byte",
	"string.char", "string.sub", "string.rep", "string.reverse", "string.lower",
	"string.upper", "string.dump", "string.find", "string.match",
	"string.gmatch_aux", "string.gmatch", "string.gsub", "string.format",
	"table.maxn", "table.insert", "table.concat", "table.clone", "table.isarray",
	"table.nkeys", "table.isempty", "table.sort", "table.new", "table.clear",
	"io.method.close", "io.method.read", "io.method.write", "io.method.flush",
	"io.method.seek", "io.method.setvbuf", "io.method.lines", "io.method.__gc",
	"io.method.__tostring", "io.open", "io.popen", "io.tmpfile", "io.close",
	"io.read", "io.write", "io.flush", "io.input", "io.output", "io.lines",
	"io.type", "os.execute", "os.remove", "os.rename", "os.tmpname", "os.getenv",
	"os.exit", "os.clock", "os.date", "os.time", "os.difftime", "os.setlocale",
	"debug.getregistry", "debug.getmetatable", "debug.setmetatable",
	"debug.getfenv", "debug.setfenv", "debug.getinfo", "debug.getlocal",
	"debug.setlocal", "debug.getupvalue", "debug.setupvalue", "debug.upvalueid",
	"debug.upvaluejoin", "debug.sethook", "debug.gethook", "debug.debug",
	"debug.traceback", "jit.on", "jit.off", "jit.flush", "jit.status",
	"jit.security", "jit.attach", "jit.prngstate", "jit.util.funcinfo",
	"jit.util.funcbc", "jit.util.funck", "jit.util.funcuvname",
	"jit.util.traceinfo", "jit.util.traceir", "jit.util.tracek",
	"jit.util.tracesnap", "jit.util.tracemc", "jit.util.traceexitstub",
	"jit.util.ircalladdr", "jit.opt.start", "jit.profile.start",
	"jit.profile.stop", "jit.profile.dumpstack", "ffi.meta.__index",
	"ffi.meta.__newindex", "ffi.meta.__eq", "ffi.meta.__len", "ffi.meta.__lt",
	"ffi.meta.__le", "ffi.meta.__concat", "ffi.meta.__call", "ffi.meta.__add",
	"ffi.meta.__sub", "ffi.meta.__mul", "ffi.meta.__div", "ffi.meta.__mod",
	"ffi.meta.__pow", "ffi.meta.__unm", "ffi.meta.__tostring", "ffi.meta.__pairs",
	"ffi.meta.__ipairs", "ffi.clib.__index", "ffi.clib.__newindex",
	"ffi.clib.__gc", "ffi.callback.free", "ffi.callback.set", "ffi.cdef",
	"ffi.new", "ffi.cast", "ffi.typeof", "ffi.typeinfo", "ffi.istype",
	"ffi.sizeof", "ffi.alignof", "ffi.offsetof", "ffi.errno", "ffi.string",
	"ffi.copy", "ffi.fill", "ffi.abi", "ffi.metatype", "ffi.gc", "ffi.load",
	"buffer.method.free", "buffer.method.reset", "buffer.method.skip",
	"buffer.method.set", "buffer.method.put", "buffer.method.putf",
	"buffer.method.get", "buffer.method.putcdata", "buffer.method.reserve",
	"buffer.method.commit", "buffer.method.ref", "buffer.method.encode",
	"buffer.method.decode", "buffer.method.__gc", "buffer.method.__tostring",
	"buffer.method.__len", "buffer.new", "buffer.encode", "buffer.decode",
};

#define LJ21_BC                                                              \
	.bc = bc21, .nbc = N(bc21), .bc_mov = 18, .bc_knil = 44,              \
	.bc_uget = 45, .bc_gget = 54, .bc_tgets = 57, .bc_iterc = 69

const struct lj_vmdef lj_vmdef_lj21 = { .ffnames = ff_lj21, .nff = N(ff_lj21), LJ21_BC };
const struct lj_vmdef lj_vmdef_or21 = { .ffnames = ff_or21, .nff = N(ff_or21), LJ21_BC };

/* -- Builtins that allocate nothing ----------------------------------------
 * By name, the same in every build: each returns its arguments, a number,
 * a boolean, a value it reads or an object it was given (type's names and
 * tostring's are not here: tostring may make a string), and fails only by
 * an error the interpreter raises after a trace exits. A call that grows
 * the Lua stack is not among them (unpack, string.byte of many). */
static const char *const ff_noalloc[] = {
	"assert", "type", "next", "pairs", "ipairs_aux", "ipairs", "getmetatable",
	"setmetatable", "rawget", "rawequal", "rawlen", "select", "tonumber",
	"coroutine.status", "coroutine.running", "coroutine.isyieldable",
	"math.abs", "math.floor", "math.ceil", "math.sqrt", "math.log10", "math.exp",
	"math.sin", "math.cos", "math.tan", "math.asin", "math.acos", "math.atan",
	"math.sinh", "math.cosh", "math.tanh", "math.frexp", "math.modf", "math.log",
	"math.atan2", "math.pow", "math.fmod", "math.ldexp", "math.min", "math.max",
	"math.random", "bit.tobit", "bit.bnot", "bit.bswap", "bit.lshift",
	"bit.rshift", "bit.arshift", "bit.rol", "bit.ror", "bit.band", "bit.bor",
	"bit.bxor", "string.len", "table.maxn", "table.isempty", "table.nkeys",
	/* lib_ffi.c: pointers and lengths converted in place, no ctype parsed */
	"ffi.copy", "ffi.fill", "ffi.errno", "ffi.abi",
};

int vmdef_ff_noalloc(const struct lj_vmdef *d, unsigned ffid)
{
	const char *name = vmdef_ffname(d, ffid);

	for (size_t k = 0; name && k < N(ff_noalloc); k++)
		if (!strcmp(name, ff_noalloc[k]))
			return 1;
	return 0;
}
