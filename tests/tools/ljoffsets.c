/* The numbers of a user/target/layout.c entry from a LuaJIT source tree's
 * headers, printed "PART.FIELD VALUE" (tests/tools/ljfields.h says which;
 * tests/layout.bats compares them with tests/tools/layoutdump.c's):
 *   cc -w -I SRC/src [-DLUAJIT_DISABLE_GC64] [-DLJOFF_OLD21] \
 *      -o ljoffsets tests/tools/ljoffsets.c
 * Not built by the Makefile: it needs a LuaJIT source tree. */
#include <stdio.h>
#include <stddef.h>
#include "lj_obj.h"
#include "lj_jit.h"
#include "lj_frame.h"
#include "lj_dispatch.h"
#include "lj_ctype.h"
#include "lj_str.h"
#include "lj_ir.h"
#include "lj_bc.h"
#include "lj_target.h"

int main(void)
{
#define F(part, field, expr) printf("%s.%s %lld\n", #part, #field, (long long)(expr));
#include "ljfields.h"
#undef F
	return 0;
}
