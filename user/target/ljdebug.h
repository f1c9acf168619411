/* The names of a prototype's locals, as lj_debug.c's debug_varname reads
 * them, over a copy of its varinfo (GCproto.varinfo: per local, its name
 * NUL-terminated or one VARNAME_* byte, then its start PC as a ULEB128
 * delta from the last one, then its length). Pure: the bytes are the
 * caller's copy, untrusted, and every read stays inside [vi, vi + len).
 * Used by convert/fnames.c (a caller's slot) and heap/paths.c (a stack
 * slot's local). */
#ifndef LMT_LJDEBUG_H
#define LMT_LJDEBUG_H

#include <stddef.h>
#include <stdint.h>

/* lj_debug.h's VARNAMEDEF: a local without a name of its own. */
#define LJ_VARNAME__MAX 7

/* The name of special local k (1 .. LJ_VARNAME__MAX - 1). */
static inline const char *lj_varname_special(uint32_t k)
{
	static const char *const s[] = {
		"(for index)", "(for limit)", "(for step)", "(for generator)",
		"(for state)", "(for control)",
	};

	return k >= 1 && k < LJ_VARNAME__MAX ? s[k - 1] : "?";
}

/* lj_buf_ruleb128, inside [*p, end): 0, or -1 past the end. */
static inline int lj_uleb(const uint8_t **p, const uint8_t *end, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned sh = 0; sh < 35; sh += 7) {
		if (*p >= end)
			return -1;
		v |= (uint32_t)(**p & 0x7f) << sh;
		if (*(*p)++ < 0x80) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

/* debug_varname: the slot-th local live at bytecode position pos. -1:
 * none. 0: a name at *name, at most *avail bytes of the copy left from it
 * (its NUL may be past them: the copy cut it). k > 0: special local k. */
static inline int lj_varname(const uint8_t *vi, size_t len, uint32_t pos, uint32_t slot,
			     const uint8_t **name, size_t *avail)
{
	const uint8_t *p = vi, *end = vi + len;
	uint32_t lastpc = 0;

	while (p < end) {
		const uint8_t *at = p;
		const uint32_t vn = *p;
		uint32_t startpc, n;

		if (vn < LJ_VARNAME__MAX) {
			if (vn == 0)
				break; /* VARNAME_END */
		} else {
			while (p < end && *p)
				p++;
		}
		p++;
		if (lj_uleb(&p, end, &startpc))
			break;
		lastpc = startpc = lastpc + startpc;
		if (startpc > pos || lj_uleb(&p, end, &n))
			break;
		if (pos < startpc + n && slot-- == 0) {
			if (vn < LJ_VARNAME__MAX)
				return (int)vn;
			*name = at;
			*avail = (size_t)(end - at);
			return 0;
		}
	}
	return -1;
}

#endif
