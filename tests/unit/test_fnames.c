/* Function names from a caller's bytecode (convert/fnames.c) and builtin
 * names by build (target/vmdef.c, convert/luanames.c's check), fed forged
 * prototypes built in this test's own memory: proc_read is defined here
 * and reads only that arena. Under ASan and UBSan: a read out of bounds
 * fails the test. Each name is the one LuaJIT's lj_debug_funcname gives
 * the same bytecode; each lie (a PC past the bytecode, an index past the
 * constants, a name without its end, a pointer outside the prototype) is
 * no name or a name cut, counted. Offsets: user/target/layout.c's LuaJIT
 * 2.1 GC64 entry. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert/conv.h"
#include "convert/fnames.h"
#include "convert/lines.h"
#include "convert/luanames.h"
#include "target/caps.h"
#include "target/proc.h"

#include "check.h"

/* -- The target: this process's arena ------------------------------------ */

#define ARENA (8u << 20)
#include "arena.h"

/* -- Forged prototypes ------------------------------------------------------ */

static const struct lj_variant *var = &lj_variants[0];

enum { MOV = 18, KNIL = 44, UGET = 45, GGET = 54, TGETS = 57, CALL = 66,
       ITERC = 69, FUNCF = 89, KSHORT = 41 };

#define AD(op, a, d) ((uint32_t)(op) | (uint32_t)(a) << 8 | (uint32_t)(d) << 16)
#define ABC(op, a, b, c) ((uint32_t)(op) | (uint32_t)(a) << 8 | (uint32_t)(c) << 16 | \
			  (uint32_t)(b) << 24)

/* A GCstr of s (len bytes claimed). */
static uint64_t gcstr(const char *s, uint32_t len)
{
	const size_t n = strlen(s);
	uint8_t *p = zalloc(var->lay.str_size + n + 1);

	p[var->u.pt_gct] = (uint8_t)var->h.tstr;
	memcpy(p + var->lay.str_len, &len, 4);
	memcpy(p + var->lay.str_size, s, n);
	return (uintptr_t)p;
}

struct fproto {
	const uint32_t *bc;
	uint32_t nbc;
	const char *const *kgc; /* string constants, kgc[0] at k - 8 */
	uint32_t nkgc;
	const uint8_t *uvinfo, *varinfo; /* NULL: none */
	size_t uvlen, varlen;
	uint32_t sizeuv;
};

/* Lays out f as LuaJIT does: kgc refs, then the GCproto, its bytecode,
 * uvinfo and varinfo after it (inside sizept). Its address. */
static uint64_t proto(const struct fproto *f)
{
	const size_t hdr = var->lay.pt_size, bcsz = 4 * (size_t)f->nbc;
	const size_t total = 8 * f->nkgc + hdr + bcsz + f->uvlen + f->varlen;
	uint8_t *m = zalloc(total + 8);
	uint8_t *pt = m + 8 * f->nkgc;
	uint64_t k = (uintptr_t)pt, a;
	uint32_t sizept = (uint32_t)(hdr + bcsz + f->uvlen + f->varlen);
	uint8_t sizeuv = (uint8_t)f->sizeuv;

	for (uint32_t i = 0; i < f->nkgc; i++) {
		a = gcstr(f->kgc[i], (uint32_t)strlen(f->kgc[i]));
		memcpy(pt - 8 * (i + 1), &a, 8);
	}
	pt[var->u.pt_gct] = (uint8_t)var->u.tproto;
	memcpy(pt + var->lay.pt_sizebc, &f->nbc, 4);
	memcpy(pt + var->h.pt_sizekgc, &f->nkgc, 4);
	memcpy(pt + var->h.pt_sizeuv, &sizeuv, 1);
	memcpy(pt + var->h.pt_sizept, &sizept, 4);
	memcpy(pt + var->h.pt_k, &k, 8);
	memcpy(pt + hdr, f->bc, bcsz);
	if (f->uvinfo) {
		a = (uintptr_t)pt + hdr + bcsz;
		memcpy(pt + var->h.pt_uvinfo, &a, 8);
		memcpy(pt + hdr + bcsz, f->uvinfo, f->uvlen);
	}
	if (f->varinfo) {
		a = (uintptr_t)pt + hdr + bcsz + f->uvlen;
		memcpy(pt + var->h.pt_varinfo, &a, 8);
		memcpy(pt + hdr + bcsz + f->uvlen, f->varinfo, f->varlen);
	}
	return (uintptr_t)pt;
}

/* The return PC after instruction pos of pt. */
static uint64_t ret_pc(uint64_t pt, uint32_t pos)
{
	return pt + var->lay.pt_size + 4 * ((uint64_t)pos + 1);
}

static struct conv_proc proc;

static struct conv_vm *fvm(void)
{
	struct conv_vm *v = calloc(1, sizeof(*v));

	v->var = var;
	v->p = &proc;
	return v;
}

static int is(const char *got, const char *want)
{
	if (got == want || (got && want && !strcmp(got, want)))
		return 1;
	printf("# got %s%s%s, want %s\n", got ? "'" : "", got ? got : "NULL", got ? "'" : "",
	       want ? want : "NULL");
	return 0;
}

/* -- Names ------------------------------------------------------------- */

static void names(void)
{
	static const char *const k1[] = { "render" }, *const k2[] = { "add" },
		*const k3[] = { "handler" };
	struct conv_vm *v = fvm();
	uint64_t pt, r;

	/* render(n): GGET 0 "render"; CALL 0 */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), AD(KSHORT, 2, 1), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 4, .kgc = k1, .nkgc = 1 });
		CHECK("a global: function 'render'", is(fname_at(v, pt, ret_pc(pt, 3)), "function 'render'"));
		r = reads;
		CHECK("asked again: the cached name, no read of the target",
		      is(fname_at(v, pt, ret_pc(pt, 3)), "function 'render'") && reads == r);
		CHECK("a PC past the bytecode: no name", !fname_at(v, pt, ret_pc(pt, 9)));
		CHECK("a PC not at an instruction: no name", !fname_at(v, pt, ret_pc(pt, 3) + 2));
		CHECK("the header instruction (no call): no name", !fname_at(v, pt, ret_pc(pt, 0)));
		fnames_forget(v, pt);
		r = reads;
		CHECK("forgotten: read again", is(fname_at(v, pt, ret_pc(pt, 3)), "function 'render'") &&
						       reads > r);
	}
	/* o:add(i): MOV 2 1 (self); TGETS 0 1 "add"; CALL 0 */
	{
		const uint32_t bc[] = { FUNCF, AD(MOV, 2, 1), ABC(TGETS, 0, 1, 0), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 4, .kgc = k2, .nkgc = 1 });
		CHECK("obj:m(): method 'add'", is(fname_at(v, pt, ret_pc(pt, 3)), "method 'add'"));
	}
	/* handlers.handler(i): TGETS 0 1 "handler"; CALL 0 */
	{
		const uint32_t bc[] = { FUNCF, AD(KSHORT, 2, 1), ABC(TGETS, 0, 1, 0), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 4, .kgc = k3, .nkgc = 1 });
		CHECK("t.f(): field 'handler'", is(fname_at(v, pt, ret_pc(pt, 3)), "field 'handler'"));
		CHECK("the TGETS itself (its __index): metamethod '__index'",
		      is(fname_at(v, pt, ret_pc(pt, 2)), "metamethod '__index'"));
	}
	/* parse(n) from a closure: UGET 0 0; CALL 0; the upvalue "parse";
	 * then a MOV that copies it (the name goes with it) */
	{
		static const uint8_t uv[] = "parse";
		const uint32_t bc[] = { FUNCF, AD(UGET, 0, 0), ABC(CALL, 0, 1, 2), AD(UGET, 0, 0),
					AD(MOV, 3, 0), ABC(CALL, 3, 1, 1) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 6, .uvinfo = uv, .uvlen = sizeof(uv),
					     .sizeuv = 1 });
		CHECK("a closure's upvalue: upvalue 'parse'", is(fname_at(v, pt, ret_pc(pt, 2)), "upvalue 'parse'"));
		CHECK("copied by MOV: still upvalue 'parse'", is(fname_at(v, pt, ret_pc(pt, 5)), "upvalue 'parse'"));
		CHECK("a call between clobbers the slot: no name, as LuaJIT",
		      (fnames_forget(v, pt), ((uint32_t *)(uintptr_t)(pt + var->lay.pt_size))[3] =
			ABC(CALL, 0, 1, 2), !fname_at(v, pt, ret_pc(pt, 5))));
	}
	/* f(n) with local f in slot 0 over [0, 10): varinfo "f" 0 10 END */
	{
		static const uint8_t vi[] = { 'f', 0, 0, 10, 0 };
		const uint32_t bc[] = { FUNCF, AD(KSHORT, 1, 1), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .varinfo = vi, .varlen = sizeof(vi) });
		CHECK("a local: local 'f'", is(fname_at(v, pt, ret_pc(pt, 2)), "local 'f'"));
	}
	/* for k, v in pairs(t): ITERC 3 names slot 0, "(for generator)" */
	{
		static const uint8_t vi[] = { 4 /* VARNAME_FOR_GEN */, 0, 10, 0 };
		const uint32_t bc[] = { FUNCF, AD(KSHORT, 1, 1), ABC(ITERC, 3, 3, 3) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .varinfo = vi, .varlen = sizeof(vi) });
		CHECK("a for iterator: local '(for generator)'",
		      is(fname_at(v, pt, ret_pc(pt, 2)), "local '(for generator)'"));
	}
	/* a slot a base instruction (KNIL over it) cleared: no name */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), AD(KNIL, 0, 1), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 4, .kgc = k1, .nkgc = 1 });
		CHECK("KNIL over the slot: no name, as LuaJIT", !fname_at(v, pt, ret_pc(pt, 3)));
	}
	fnames_free(v);
	free(v);
}

/* -- By line (a frame a trace inlined) ---------------------------------------- */

/* pt's line table: every instruction at line 7 but the header (line 5). */
static void lines_of(struct conv_vm *v, uint64_t pt, uint32_t nbc)
{
	struct pline *l = calloc(1, sizeof(*l) + nbc);
	int err;

	*l = (struct pline){ .firstline = 5, .sizebc = nbc, .numline = 3, .width = 1,
			     .len = nbc - 1 };
	for (uint32_t i = 0; i + 1 < nbc; i++)
		l->li[i] = 2;
	u64map_put(&v->lines, pt, l, &err);
}

static void by_line(void)
{
	static const char *const k[] = { "render", "add" };
	struct conv_vm *v = fvm();
	uint64_t pt;

	/* render(add(x)) at line 7: GGET 0 "render"; GGET 2 "add"; CALL 2;
	 * CALL 0 */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), AD(GGET, 2, 1), ABC(CALL, 2, 2, 1),
					ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 5, .kgc = k, .nkgc = 2 });
		lines_of(v, pt, 5);
		CHECK("two calls at the line, two names: none by line alone",
		      !fname_at_line(v, pt, 7, 0x1000));
		fname_learn(v, pt, 7, 0x1000, "function 'add'");
		fname_learn(v, pt, 7, 0x2000, "function 'render'");
		CHECK("the interpreter showed the call to each callee: its name",
		      is(fname_at_line(v, pt, 7, 0x1000), "function 'add'") &&
		      is(fname_at_line(v, pt, 7, 0x2000), "function 'render'"));
		fname_learn(v, pt, 7, 0x2000, "function 'add'");
		CHECK("a callee shown under two names at the line: none",
		      !fname_at_line(v, pt, 7, 0x2000));
		fname_learn(v, pt, 7, 0x3000, NULL);
		CHECK("a callee shown without a name: none", !fname_at_line(v, pt, 7, 0x3000));
	}
	/* one call at the line */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .kgc = k, .nkgc = 1 });
		lines_of(v, pt, 3);
		CHECK("one call at the line: its name", is(fname_at_line(v, pt, 7, 0x1000),
							   "function 'render'"));
		CHECK("a line without a call: none", !fname_at_line(v, pt, 9, 0x1000));
	}
	u64map_free(&v->lines, free);
	fnames_free(v);
	free(v);
}

/* -- A lying prototype ------------------------------------------------------ */

static void lies(void)
{
	static const char *const k1[] = { "render" };
	struct conv_vm *v = fvm();
	uint64_t pt, before;
	uint8_t *p;

	/* a constant index past sizekgc */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 5), ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .kgc = k1, .nkgc = 1 });
		CHECK("a constant past sizekgc: no name", !fname_at(v, pt, ret_pc(pt, 2)));
	}
	/* a string constant claiming 1 GiB: cut to LMT_FNAME_ID_MAX, counted */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), ABC(CALL, 0, 1, 2) };
		static const char *const kl[] = { "x" };
		uint64_t s, want_len = strlen("function ''") + LMT_FNAME_ID_MAX;
		const char *n;

		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .kgc = kl, .nkgc = 1 });
		s = gcstr("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
			  1u << 30);
		memcpy((uint8_t *)(uintptr_t)pt - 8, &s, 8);
		before = proc.fn_cut;
		n = fname_at(v, pt, ret_pc(pt, 2));
		CHECK("a 1 GiB name: cut to the cap, ending in ...",
		      n && strlen(n) == want_len && !strcmp(n + strlen(n) - 4, "...'"));
		CHECK("the cut counted", proc.fn_cut == before + 1);
	}
	/* an upvalue name without its NUL to the end of the prototype */
	{
		static const uint8_t uv[] = { 'p', 'a', 'r', 's', 'e' };
		const uint32_t bc[] = { FUNCF, AD(UGET, 0, 0), ABC(CALL, 0, 1, 2) };
		const char *n;

		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .uvinfo = uv, .uvlen = sizeof(uv),
					     .sizeuv = 1 });
		n = fname_at(v, pt, ret_pc(pt, 2));
		CHECK("an upvalue name without its end: read inside the prototype only",
		      is(n, "upvalue 'parse...'"));
		CHECK("an upvalue index past sizeuv: no name",
		      (p = (uint8_t *)(uintptr_t)pt, p[var->h.pt_sizeuv] = 0, fnames_forget(v, pt),
		       !fname_at(v, pt, ret_pc(pt, 2))));
	}
	/* varinfo: a uleb that never ends, and a pointer outside the
	 * prototype (the bytecode's answer stands) */
	{
		static const uint8_t vi[] = { 'f', 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80 };
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), ABC(CALL, 0, 1, 2) };
		uint64_t far = 0x1000;

		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .kgc = k1, .nkgc = 1, .varinfo = vi,
					     .varlen = sizeof(vi) });
		CHECK("an endless uleb in varinfo: no local, the global found",
		      is(fname_at(v, pt, ret_pc(pt, 2)), "function 'render'"));
		memcpy((uint8_t *)(uintptr_t)pt + var->h.pt_varinfo, &far, 8);
		fnames_forget(v, pt);
		CHECK("varinfo outside the prototype: not read, the global found",
		      is(fname_at(v, pt, ret_pc(pt, 2)), "function 'render'"));
	}
	/* not a prototype; a sizebc over the cap; a sizept too small for it */
	{
		const uint32_t bc[] = { FUNCF, AD(GGET, 0, 0), ABC(CALL, 0, 1, 2) };
		uint32_t big = LMT_PROTO_BC_MAX + 1, small = 8;

		pt = proto(&(struct fproto){ .bc = bc, .nbc = 3, .kgc = k1, .nkgc = 1 });
		p = (uint8_t *)(uintptr_t)pt;
		p[var->u.pt_gct] = 0;
		before = proc.fn_unread;
		CHECK("not a prototype (its type tag): no name, counted",
		      !fname_at(v, pt, ret_pc(pt, 2)) && proc.fn_unread == before + 1);
		p[var->u.pt_gct] = (uint8_t)var->u.tproto;
		memcpy(p + var->lay.pt_sizebc, &big, 4);
		fnames_forget(v, pt);
		CHECK("sizebc over LMT_PROTO_BC_MAX: no name", !fname_at(v, pt, ret_pc(pt, 2)));
		big = 3;
		memcpy(p + var->lay.pt_sizebc, &big, 4);
		memcpy(p + var->h.pt_sizept, &small, 4);
		fnames_forget(v, pt);
		CHECK("sizept smaller than its bytecode: no name", !fname_at(v, pt, ret_pc(pt, 2)));
	}
	/* a MOV chain back to the first instruction ends */
	{
		const uint32_t bc[] = { FUNCF, AD(MOV, 0, 0), AD(MOV, 0, 0), AD(MOV, 0, 0),
					ABC(CALL, 0, 1, 2) };
		pt = proto(&(struct fproto){ .bc = bc, .nbc = 5 });
		CHECK("MOV of a slot to itself, back to the start: no name, it ends",
		      !fname_at(v, pt, ret_pc(pt, 4)));
	}
	/* the loading GGET LMT_FNAME_WALK_MAX + 1 instructions before the
	 * call: the walk stops at its cap, counted; one less: found */
	{
		const uint32_t n = LMT_FNAME_WALK_MAX + 4;
		uint32_t *bc = calloc(n, 4);

		bc[0] = FUNCF;
		bc[1] = AD(GGET, 0, 0);
		for (uint32_t i = 2; i < n - 1; i++)
			bc[i] = AD(KSHORT, 1, 1);
		bc[n - 1] = ABC(CALL, 0, 1, 2);
		pt = proto(&(struct fproto){ .bc = bc, .nbc = n, .kgc = k1, .nkgc = 1 });
		before = proc.fn_unread;
		CHECK("the loading instruction past LMT_FNAME_WALK_MAX: no name, counted",
		      !fname_at(v, pt, ret_pc(pt, n - 1)) && proc.fn_unread == before + 1);
		/* the call LMT_FNAME_WALK_MAX instructions after the GGET */
		bc[LMT_FNAME_WALK_MAX + 1] = ABC(CALL, 0, 1, 2);
		pt = proto(&(struct fproto){ .bc = bc, .nbc = LMT_FNAME_WALK_MAX + 2, .kgc = k1,
					     .nkgc = 1 });
		CHECK("the loading instruction just inside the cap: found",
		      is(fname_at(v, pt, ret_pc(pt, LMT_FNAME_WALK_MAX + 1)), "function 'render'"));
		free(bc);
	}
	CHECK("unreadable prototypes counted", proc.fn_unread >= 2);
	fnames_free(v);
	free(v);
}

/* -- Builtins by build ------------------------------------------------------ */

static void builtins(void)
{
	struct u64map m = { 0 };
	int err;

	CHECK("Debian's luajit: ffid 86 is string.gmatch_aux",
	      is(vmdef_ffname(&lj_vmdef_lj21, 86), "string.gmatch_aux"));
	CHECK("OpenResty's luajit2: ffid 88 is string.gmatch_aux (thread.exdata, exdata2 before)",
	      is(vmdef_ffname(&lj_vmdef_or21, 88), "string.gmatch_aux") &&
	      is(vmdef_ffname(&lj_vmdef_or21, 38), "thread.exdata"));
	CHECK("each build's last ffid (buffer.decode) and none past it",
	      is(vmdef_ffname(&lj_vmdef_lj21, 222), "buffer.decode") &&
	      is(vmdef_ffname(&lj_vmdef_or21, 229), "buffer.decode") &&
	      !vmdef_ffname(&lj_vmdef_lj21, 223) && !vmdef_ffname(&lj_vmdef_or21, 230));
	CHECK("Tarantool 2.6's fork: Debian's ffids up to jit.attach at 147 (no jit.security), "
	      "ffi.load its last at 202 (no string buffers)",
	      is(vmdef_ffname(&lj_vmdef_tt26, 86), "string.gmatch_aux") &&
	      is(vmdef_ffname(&lj_vmdef_tt26, 146), "jit.status") &&
	      is(vmdef_ffname(&lj_vmdef_tt26, 147), "jit.attach") &&
	      is(vmdef_ffname(&lj_vmdef_tt26, 202), "ffi.load") &&
	      !vmdef_ffname(&lj_vmdef_tt26, 203));
	CHECK("ffid 0 and 1 (Lua, C) are no builtin", !vmdef_ffname(&lj_vmdef_lj21, 0) &&
						  !vmdef_ffname(&lj_vmdef_lj21, 1));
	CHECK("the variants point to their builds",
	      lj_variants[0].vmdef == &lj_vmdef_lj21 && lj_variants[1].vmdef == &lj_vmdef_or21);
	for (unsigned i = 0; i < lj_nvariants; i++)
		if (strstr(lj_variants[i].name, "Tarantool"))
			CHECK("Tarantool's variant points to its list",
			      lj_variants[i].vmdef == &lj_vmdef_tt26);
	/* package.loaded's string.gmatch at Debian's 87 */
	u64map_put(&m, LUANAMES_FF(87), strdup("string.gmatch"), &err);
	u64map_put(&m, LUANAMES_FF(20), strdup("pcall"), &err);
	u64map_put(&m, 0x1234, strdup("string.gmatch"), &err); /* a C function: not a builtin */
	CHECK("package.loaded agrees with Debian's build", !luanames_ffbad(&m, &lj_vmdef_lj21));
	CHECK("and contradicts OpenResty's (its 87 is string.match)",
	      luanames_ffbad(&m, &lj_vmdef_or21) == 1);
	free(u64map_put(&m, LUANAMES_FF(87), strdup("my.gmatch"), &err));
	CHECK("a name no build has contradicts nothing", !luanames_ffbad(&m, &lj_vmdef_or21));
	u64map_free(&m, free);
}

int main(void)
{
	names();
	by_line();
	lies();
	builtins();
	free(arena);
	return fails != 0;
}
