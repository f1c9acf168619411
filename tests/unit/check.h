/* TAP-style checks shared by the unit tests: "ok - name" or "not ok - name"
 * per check (tests/run-unit.sh counts them); main returns fails != 0. */
#ifndef LMT_UNIT_CHECK_H
#define LMT_UNIT_CHECK_H

#include <stdio.h>

static int fails;

#define CHECK(name, cond)                                          \
	do {                                                       \
		if (cond)                                          \
			printf("ok - %s\n", name);                 \
		else {                                             \
			printf("not ok - %s\n", name);             \
			fails++;                                   \
		}                                                  \
	} while (0)

#endif
