/* layoutdump NAME: the numbers of user/target/layout.c's entry NAME that
 * LuaJIT's headers define, printed "PART.FIELD VALUE" as
 * tests/tools/ljoffsets.c prints them from a source tree
 * (tests/tools/ljfields.h); an entry without a heap walker's part (its
 * gg_size 0) without its h. lines. Exit 2 on an unknown NAME. */
#include <stdio.h>
#include <string.h>

#include "target/layout.h"

int main(int argc, char **argv)
{
	const struct lj_variant *e = NULL;

	for (unsigned i = 0; argc == 2 && i < lj_nvariants; i++)
		if (!strcmp(lj_variants[i].name, argv[1]))
			e = &lj_variants[i];
	if (!e) {
		fprintf(stderr, "layoutdump: no entry \"%s\"\n", argc == 2 ? argv[1] : "");
		return 2;
	}
#define VAL_lay(f) e->lay.f
#define VAL_u(f) e->u.f
#define VAL_h(f) e->h.f
#define VAL_v(f) e->f
#define F(part, field, expr)                                                  \
	if (strcmp(#part, "h") || e->h.gg_size)                               \
		printf("%s.%s %lld\n", #part, #field, (long long)VAL_##part(field));
#include "ljfields.h"
#undef F
	return 0;
}
