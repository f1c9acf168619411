/* The layout table against what BPF assumes of it. */
#include <stddef.h>
#include <stdio.h>

#include "target/layout.h"

#include "check.h"

int main(void)
{
	char name[160];

	CHECK("two variants", lj_nvariants == 2);
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
	}
	return fails != 0;
}
