/* Traces: a snapshot's stack frames (convert/jit_int.h), told from its
 * frame slots and the prototypes they name while the process is stopped,
 * for the stacks of events charged to the snapshot (traces_frames). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/jit_int.h"
#include "convert/cnames.h"
#include "convert/luanames.h"
#include "target/ljref.h"

/* -- Stacks ------------------------------------------------------------ */

/* A Lua frame at PC pc: its prototype and the line of the instruction at
 * pos + d (d = -1: the call before a return PC). */
static int lua_frame(struct conv_vm *v, struct ttrace *tr, uint64_t pc, int d,
		     struct sk_frame *f)
{
	struct tproto *tp;
	uint64_t pt;
	uint32_t pos;
	int64_t line;

	if (!(tp = jit_at_pc(v, tr, pc, &pt, &pos)) || (int64_t)pos + d < 0 ||
	    (line = pline_line(tp->lines, (uint64_t)((int64_t)pos + d))) < 0)
		return -1;
	*f = (struct sk_frame){ .src = MP_SRC_LFUNC, .addr = pt, .line = (uint64_t)line };
	return 0;
}

/* A non-Lua frame's function fn (a GCfunc): a C function by its address,
 * a builtin as src 0 and its ffid. */
int jit_fn_frame(struct conv_vm *v, struct ttrace *tr, uint64_t fn, struct sk_frame *f)
{
	const struct lj_layout *l = &v->var->lay;
	uint8_t ffid;
	uint64_t cf;

	fn &= LJ_GCVMASK;
	if (jit_fn_ffid(v, tr, fn, &ffid) || ffid == 0 /* Lua */ ||
	    jit_rd(v, tr, fn + l->fn_f, &cf, 8))
		return -1;
	*f = ffid == 1 ? (struct sk_frame){ .src = MP_SRC_CFUNC, .addr = cf } :
			 (struct sk_frame){ .src = 0, .addr = ffid };
	/* its name too, while the process is there to read it from */
	lua_name(v, ffid == 1 ? cf : LUANAMES_FF(ffid));
	return 0;
}

/* Snapshot sn's innermost frame and the frames below it, down to the
 * trace's base frame (slot 0): each frame's function slot and link (FR2).
 * Read while the process is stopped: its events may come after its end.
 * Each frame is two slots or more below the last (its function and link):
 * a link saying less is not LuaJIT's, and ends the walk. */
void jit_snap_frames(struct conv_vm *v, struct ttrace *tr, struct tsnap *sn)
{
	const unsigned cap = sn->baseslot / 2 + 1;
	struct sk_frame *out;
	uint64_t pc, link, d;
	int64_t fs;
	unsigned n = 0;

	if (sn->resolved != 1 || lua_frame(v, tr, sn->pc, 0, &sn->top))
		return;
	sn->has_top = 1;
	if (jit_keep(tr, cap * sizeof(*out)) || !(out = calloc(cap, sizeof(*out))))
		return;
	for (fs = (int64_t)sn->baseslot - 2; fs > 0 && n < cap;) {
		if (jit_fr_get(sn, (uint32_t)fs + 1, &link))
			break;
		if ((link & LJ_FRAME_TYPE) == 0) { /* a Lua frame: its caller's return PC */
			const struct tproto *tp;
			uint64_t pt;
			uint32_t pos;
			int64_t line;

			if (!(tp = jit_at_pc(v, tr, link, &pt, &pos)) || !pos ||
			    pos - 1 >= tp->sizebc ||
			    (line = pline_line(tp->lines, pos - 1)) < 0)
				break;
			/* the caller, at the line of the CALL before link */
			fs -= 2 + (tp->bc[pos - 1] >> 8 & 0xff);
			if (fs < 0)
				break;
			out[n++] = (struct sk_frame){ .src = MP_SRC_LFUNC, .addr = pt,
						      .line = (uint64_t)line };
			continue;
		}
		/* A continuation keeps the caller's PC below it. */
		if ((link & LJ_FRAME_TYPEP) == LJ_FRAME_CONT &&
		    jit_fr_get(sn, (uint32_t)fs - 1, &pc))
			break;
		if ((link & LJ_FRAME_TYPEP) != LJ_FRAME_CONT)
			pc = 0;
		d = (link & ~(uint64_t)LJ_FRAME_TYPEP) / 8;
		if (d < 2) {
			tr->over = 1; /* a forged link */
			break;
		}
		if (d > (uint64_t)fs)
			break;
		fs -= (int64_t)d;
		/* FRAME_VARG: the frame below is the same call's (a vararg
		 * function's, its fixed arguments copied up: rec_func_vararg),
		 * its link the caller's: no frame of its own */
		if ((link & LJ_FRAME_TYPEP) == LJ_FRAME_VARG)
			continue;
		if (pc ? lua_frame(v, tr, pc, -1, &out[n]) :
			 /* a builtin's (pcall) or a C function's frame */
			 jit_fr_get(sn, (uint32_t)fs, &pc) || jit_fn_frame(v, tr, pc, &out[n]))
			break;
		n++;
	}
	sn->whole = fs == 0;
	sn->below = out;
	sn->nbelow = n;
}

