/* Traces: sunk allocations (convert/jit_int.h).
 *
 * Sunk allocations (lj_opt_sink) are made where the object escapes: at an
 * exit, restored by lj_snap_restore (vmstate EXIT), or at the start of a
 * side trace, replayed from its parent's exit (lj_snap_replay), before
 * the side trace's first snapshot. Either way the snapshot names the
 * stack slot the object lives in; the bytecode that created it is the
 * TNEW or TDUP into that slot found walking back from the snapshot's PC,
 * and its line is charged when all the objects restored there agree. A
 * side trace's replayed objects share their machine code stretch with its
 * first snapshot's: its new blocks there are charged to them when that
 * stretch's own bytecode allocates nothing (what it stores to grows by
 * reallocation, charged to the store). Not exact: a store there that
 * makes a table's hash part (a new block) counts as a replayed object. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "convert/jit_int.h"

/* -- Sunk allocations -------------------------------------------------- */

/* The TNEW or TDUP that filled register r, walking back from PC pc within
 * its loop body: its prototype and line. */
static int created_at(struct conv_vm *v, struct ttrace *tr, uint64_t pc, uint32_t r,
		      struct origin *o)
{
	const struct lj_ulayout *u = &v->var->u;
	struct tproto *tp;
	uint64_t pt;
	uint32_t pos;

	if (!(tp = jit_at_pc(v, tr, pc, &pt, &pos)))
		return -1;
	for (uint32_t p = pos, n = 0; p-- > 1 && n < WALK_MAX; n++) {
		const uint32_t ins = tp->bc[p], op = ins & 0xff;

		if ((op == u->bc_tnew || op == u->bc_tdup) && (ins >> 8 & 0xff) == r) {
			o->pt = pt;
			o->line = pline_line(tp->lines, p);
			return o->line < 0 ? -1 : 0;
		}
		if (op >= u->bc_fori && op <= u->bc_jloop)
			return -1; /* the loop's head: made in another iteration */
	}
	return -1;
}

/* Adds the origin of one object to o: n found (state 1) or not (0). */
static void origin_add(struct origin *o, const struct origin *n)
{
	if (!n->state)
		o->state = 2;
	else if (!o->state)
		*o = (struct origin){ .state = 1, .pt = n->pt, .line = n->line };
	else if (o->pt != n->pt || o->line != n->line)
		o->state = 2;
}

/* Snapshot i's entries ent (baseslot: the slot of its innermost frame's
 * register 0): the objects an exit there restores, and for the first
 * snapshot of a side trace those replayed before it. */
void jit_sunk_origins(struct conv_vm *v, struct ttrace *tr, uint32_t i,
		      const uint32_t *ent, uint32_t nent, uint32_t baseslot)
{
	const struct lj_ulayout *u = &v->var->u;

	for (uint32_t k = 0; tr->ir && k < nent; k++) {
		const uint32_t ref = ent[k] & 0xffff, slot = ent[k] >> 24;
		const uint8_t *ins;
		struct origin n;
		int replayed, sunk;

		if (ref < tr->nk || ref >= tr->nins)
			continue;
		ins = (const uint8_t *)&tr->ir[ref - tr->nk];
		if (ins[u->ir_o] != u->ir_tnew && ins[u->ir_o] != u->ir_tdup &&
		    ins[u->ir_o] != u->ir_cnew && ins[u->ir_o] != u->ir_cnewi)
			continue;
		sunk = ins[u->ir_r] == u->rid_sunk;
		replayed = i == 0 && ref < tr->s[0].ref;
		if (!sunk && !replayed)
			continue;
		n.state = slot >= baseslot &&
			  !created_at(v, tr, tr->s[i].pc, slot - baseslot, &n);
		if (sunk)
			origin_add(&tr->xsunk[i], &n);
		if (replayed)
			origin_add(&tr->replay, &n);
	}
}

