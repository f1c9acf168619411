/* Traces: what a trace's IR tells the walk of a stretch (convert/jit_int.h,
 * convert/jit_walk.c): the Lua functions it inlined there and how each was
 * called (a call, or a metamethod it looked up in a metatable), the
 * builtins it compiled in, its NEWREFs. Every read bounded by the trace's
 * budgets (jit_rd); every IR ref checked against the trace's IR. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/jit_int.h"
#include "target/ljref.h"

int jit_fn_ffid(struct conv_vm *v, struct ttrace *tr, uint64_t fn, uint8_t *ffid)
{
	return jit_rd(v, tr, (fn & LJ_GCVMASK) + v->var->lay.fn_ffid, ffid, 1);
}

/* The prototype of Lua function fn (a GCfunc), or 0. */
uint64_t jit_fn_proto(struct conv_vm *v, struct ttrace *tr, uint64_t fn)
{
	const struct lj_layout *l = &v->var->lay;
	uint64_t pc = 0;
	uint8_t ffid;

	fn &= LJ_GCVMASK;
	if (jit_fn_ffid(v, tr, fn, &ffid) || ffid != 0 /* FF_LUA */ ||
	    jit_rd(v, tr, fn + l->fn_pc, &pc, lj_refsz(v->var)))
		return 0;
	return pc - l->pt_size;
}


/* Operand k (0, 1) of instruction ins. */
uint32_t jit_ir_opn(const struct lj_ulayout *u, const uint8_t *ins, int k)
{
	uint16_t o;

	memcpy(&o, ins + (k ? u->ir_op2 : u->ir_op1), 2);
	return o;
}

/* The kind of metamethod a function constant is, when instruction ins
 * compares it (its operand k) with a metamethod looked up in a metatable
 * (lj_record_mm_lookup: HLOAD of HREFK or HREF of the node of FLOAD
 * tab.meta or udata.meta, by the metamethod's name; or of a metatable the
 * recorder made a constant, a KGC, as it does for one it guards on, by
 * such a name). MM_NONE if not. */
int jit_mm_kind(struct conv_vm *v, struct ttrace *tr, const uint8_t *ins, int k)
{
	static const struct { const char *name; int kind; } mms[] = {
		{ "__index", MM_INDEX }, { "__newindex", MM_NEWINDEX },
		{ "__call", MM_CALL }, { "__concat", MM_CONCAT },
		{ "__add", MM_ARITH }, { "__sub", MM_ARITH }, { "__mul", MM_ARITH },
		{ "__div", MM_ARITH }, { "__mod", MM_ARITH }, { "__pow", MM_ARITH },
		{ "__unm", MM_ARITH }, { "__len", MM_ARITH },
	};
	const struct lj_ulayout *u = &v->var->u;
	const uint8_t *h, *r, *n, *m, *c;
	uint32_t key, fl;
	uint64_t str;
	uint32_t len;
	char name[12];
	int other;

	if (!(h = jit_ir_at(tr, jit_ir_opn(u, ins, !k))) || h[u->ir_o] != u->ir_hload ||
	    !(r = jit_ir_at(tr, jit_ir_opn(u, h, 0))) ||
	    (r[u->ir_o] != u->ir_hrefk && r[u->ir_o] != u->ir_href) ||
	    !(n = jit_ir_at(tr, jit_ir_opn(u, r, 0))) || n[u->ir_o] != u->ir_fload ||
	    jit_ir_opn(u, n, 1) != u->irfl_tab_node || !(m = jit_ir_at(tr, jit_ir_opn(u, n, 0))) ||
	    (m[u->ir_o] != u->ir_fload && m[u->ir_o] != u->ir_kgc))
		return MM_NONE;
	fl = jit_ir_opn(u, m, 1);
	if (m[u->ir_o] == u->ir_fload && fl != u->irfl_tab_meta && fl != u->irfl_udata_meta)
		return MM_NONE;
	/* a constant table looked up by another name: a field, not a
	 * metamethod (a module's function through an upvalue) */
	other = m[u->ir_o] == u->ir_kgc ? MM_NONE : MM_OTHER;
	/* Its name: a string constant, the KSLOT's under HREFK. */
	key = jit_ir_opn(u, r, 1);
	if (r[u->ir_o] == u->ir_hrefk)
		key = (c = jit_ir_at(tr, key)) && c[u->ir_o] == u->ir_kslot ? jit_ir_opn(u, c, 0) : 0;
	if (!(c = jit_ir_at(tr, key)) || c[u->ir_o] != u->ir_kgc ||
	    jit_kref(v, tr, key, &str))
		return other;
	str &= LJ_GCVMASK;
	if (jit_rd(v, tr, str + v->var->lay.str_len, &len, 4) || len >= sizeof(name) ||
	    jit_rd(v, tr, str + v->var->lay.str_size, name, len))
		return other;
	name[len] = 0;
	for (size_t j = 0; j < sizeof(mms) / sizeof(mms[0]); j++)
		if (!strcmp(name, mms[j].name))
			return mms[j].kind;
	return other;
}

/* The Lua functions trace tr inlined in IR refs [lo, hi): the GCfuncs its
 * instructions there take as KGC constants, in order, their prototypes
 * and how each was called (mm_kind) (at most max); the other functions
 * (builtins the trace compiled in) in bfns, *nb of them (at most max). */
unsigned jit_inlined(struct conv_vm *v, struct ttrace *tr, uint32_t lo,
			uint32_t hi, uint64_t *pts, uint64_t *fns, uint8_t *mms,
			uint32_t *crefs, unsigned max, uint64_t *bfns, uint32_t *brefs,
			unsigned *nb)
{
	const struct lj_ulayout *u = &v->var->u;
	unsigned n = 0;

	*nb = 0;
	if (!tr->ir)
		return 0;
	if (lo < tr->nk)
		lo = tr->nk;
	if (hi > tr->nins)
		hi = tr->nins;
	for (uint32_t ref = lo; ref < hi && n < max; ref++) {
		const uint8_t *ins = (const uint8_t *)&tr->ir[ref - tr->nk];
		uint16_t ops[2];

		memcpy(&ops[0], ins + u->ir_op1, 2);
		memcpy(&ops[1], ins + u->ir_op2, 2);
		for (int k = 0; k < 2 && n < max; k++) {
			const uint32_t c = ops[k];
			uint64_t fn, pt;
			const uint8_t *kg;
			unsigned j;

			/* A function constant (IRT_FUNC; the type's low bits),
			 * its pointer (jit_kref) read. */
			if (c < tr->nk || c >= tr->nins || c >= u->ref_bias)
				continue;
			kg = (const uint8_t *)&tr->ir[c - tr->nk];
			if (kg[u->ir_o] != u->ir_kgc || (kg[u->ir_t] & 0x1f) != u->irt_func ||
			    jit_kref(v, tr, c, &fn))
				continue;
			fn &= LJ_GCVMASK;
			if (!(pt = jit_fn_proto(v, tr, fn))) {
				/* a builtin or C function (bfns), once */
				for (j = 0; j < *nb && bfns[j] != fn; j++)
					;
				if (j == *nb && *nb < max) {
					brefs[*nb] = ref;
					bfns[(*nb)++] = fn;
				}
				continue;
			}
			for (j = 0; j < n && pts[j] != pt; j++)
				;
			if (j == n) {
				mms[n] = (uint8_t)jit_mm_kind(v, tr, ins, k);
				crefs[n] = ref;
				fns[n] = fn;
				pts[n++] = pt;
			}
		}
	}
	return n;
}

/* NEWREF instructions of trace tr's IR refs [lo, hi): stores of a new key,
 * which may grow the table (lj_tab_newkey); in *nv those whose key is not
 * a GC constant (a field's name: TSETS's). */
unsigned jit_newrefs(struct conv_vm *v, const struct ttrace *tr, uint32_t lo,
			uint32_t hi, unsigned *nv)
{
	const struct lj_ulayout *u = &v->var->u;
	unsigned n = 0;

	*nv = 0;
	for (uint32_t ref = lo; ref < hi; ref++) {
		const uint8_t *ins = jit_ir_at(tr, ref), *key;

		if (!ins || ins[u->ir_o] != u->ir_newref)
			continue;
		n++;
		key = jit_ir_at(tr, jit_ir_opn(u, ins, 1));
		*nv += !key || key[u->ir_o] != u->ir_kgc;
	}
	return n;
}
