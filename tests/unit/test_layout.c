/* The layout table against what BPF assumes of it. */
#include <stddef.h>
#include <stdio.h>

#include "target/layout.h"

#include "check.h"

int main(void)
{
	char name[160];

	CHECK("five variants", lj_nvariants == 5);
	CHECK("the third is GC64 off, its references 4 bytes",
	      !lj_variants[2].lay.gc64 && lmt_refsz(&lj_variants[2].lay) == 4 &&
	      lmt_refsz(&lj_variants[0].lay) == 8);
	for (unsigned i = 0; i < lj_nvariants; i++) {
		const struct lj_variant *v = &lj_variants[i];
		const struct lj_layout *l = &v->lay;

		snprintf(name, sizeof(name), "%s: GG window covers vmstate, cur_L "
			 "and the main lua_State's fields", v->name);
		CHECK(name, lmt_gwin_fits(l));
		snprintf(name, sizeof(name), "%s: every fixed-size read window "
			 "(GCproto, GCfunc, GCtrace) holds its fields", v->name);
		CHECK(name, lmt_windows_fit(l));
		snprintf(name, sizeof(name), "%s: g follows lua_State in GG_State",
			 v->name);
		CHECK(name, l->gg_g == v->sizeof_L);
		snprintf(name, sizeof(name), "%s: vmstate INTERP is the "
			 "interpreter's, C is resolved from the frame", v->name);
		CHECK(name, l->nvmst > 1 && l->vmst[0] == LMT_VMST_INTERP &&
		      l->vmst[1] == LMT_VMST_FRAME);

		/* The heap walker's offsets (struct lj_hlayout), where the
		 * entry has them (gg_size: Tarantool's has none yet); GCRefs
		 * at the entry's width */
		const struct lj_hlayout *h = &v->h;
		if (!h->gg_size)
			continue;
		snprintf(name, sizeof(name), "%s: heap: gcroot[] and uvhead lie in "
			 "global_State, J in GG_State", v->name);
		CHECK(name, l->gg_g + h->g_gcroot + lmt_refsz(l) * h->gcroot_max <= l->gg_J &&
		      h->g_uvhead + h->uv_sizeof <= h->g_gcroot && l->gg_J < h->gg_size);
		snprintf(name, sizeof(name), "%s: heap: LuaJIT's type tags (~itype)",
			 v->name);
		CHECK(name, h->tstr == 4 && h->tupval == 5 && l->tthread == 6 &&
		      h->tproto == 7 && l->tfunc == 8 && h->ttrace == 9 &&
		      h->tcdata == 10 && h->ttab == 11 && h->tudata == 12);
		snprintf(name, sizeof(name), "%s: heap: sizes agree with the tracer's "
			 "(GCstr, lua_State's stack, GCfuncL's uvptr)", v->name);
		CHECK(name, h->str_sizeof == l->str_size && l->L_stack < v->sizeof_L &&
		      h->L_stacksize < v->sizeof_L &&
		      v->u.fn_uvptr + lmt_refsz(l) == h->fnl_sizeof &&
		      h->fn_upvalue + 8 == h->fnc_sizeof);
		snprintf(name, sizeof(name), "%s: heap: fields inside their structures",
			 v->name);
		CHECK(name, h->tab_metatable < h->tab_sizeof && h->tab_asize < h->tab_sizeof &&
		      h->uv_tv < h->uv_sizeof && h->pt_sizekgc < l->pt_size &&
		      h->ud_metatable < h->ud_sizeof && h->cts_cb_sizeid < h->cts_sizeof &&
		      h->T_nextside < l->T_size && h->ct_size < h->ct_sizeof);
	}
	return fails != 0;
}
