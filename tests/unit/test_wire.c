/* Events on the wire (bpf/luamemtrace.h): lmt_ev_pack, as BPF packs an
 * event into a batch, against lmt_ev_unpack, as user space reads it; the
 * words BPF's return writes in place (naddr, seq, a realloc's oaddr); and
 * what does not make an event. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/types.h>

#include "luamemtrace.h"

#include "check.h"

#define SENTINEL 0x5a5a5a5a5a5a5a5aULL

static int same(const struct lmt_ev *a, const struct lmt_ev *b)
{
	return a->kind == b->kind && a->src == b->src && a->flags == b->flags &&
	       a->line == b->line && a->loc == b->loc && a->oaddr == b->oaddr &&
	       a->osize == b->osize && a->naddr == b->naddr && a->nsize == b->nsize &&
	       a->stk == b->stk && a->seq == b->seq;
}

/* Every kind, with and without loc, stk and seq: unpacked as packed, in
 * the words lmt_ev_words says, none stored past LMT_EV_WMAX. */
static void round_trips(void)
{
	int all = 1, words = 1, bounded = 1, naddr = 1, seqw = 1, oaddrw = 1;

	for (int kind = LMT_ALLOC; kind <= LMT_RET; kind++)
		for (int m = 0; m < 8; m++) {
			__u64 w[2 * LMT_EV_WMAX];
			struct lmt_ev e = {
				.kind = (__u8)kind, .src = LMT_SRC_TRACE,
				.flags = LMT_EV_MCOFS, .line = 0x12345,
				.loc = (m & 1) ? 0x7f0011223340ULL : 0,
				.stk = (m & 2) ? 0x99 : 0,
			}, u;
			const __u64 seq = (m & 4) ? 1234567 : 0;
			__u32 n, nu;
			__u8 fl;

			if (kind != LMT_ALLOC && kind != LMT_RET) {
				e.oaddr = 0x7f00aabbcc00ULL;
				e.osize = 72;
			}
			if (kind != LMT_FREE) {
				e.naddr = 0x7f00ddeeff00ULL;
				e.nsize = kind == LMT_RET ? 0 : 4096;
			}
			for (int i = 0; i < 2 * LMT_EV_WMAX; i++)
				w[i] = SENTINEL;
			n = lmt_ev_pack(w, &e, seq);
			fl = (__u8)(w[0] >> 16);
			nu = lmt_ev_unpack(w, n, &u);
			e.seq = seq;
			all &= nu == n && same(&u, &e);
			words &= n == lmt_ev_words(e.kind, fl) && n == ((w[0] >> 24) & 0xff);
			for (int i = LMT_EV_WMAX; i < 2 * LMT_EV_WMAX; i++)
				bounded &= w[i] == SENTINEL;
			if (kind != LMT_FREE)
				naddr &= w[lmt_ev_naddr_w(fl)] == e.naddr;
			if (kind == LMT_REALLOC)
				oaddrw &= w[lmt_ev_naddr_w(fl) + 2] == e.oaddr;
			if (seq)
				seqw &= w[n - 1] == seq;
			else
				seqw &= !(fl & LMT_EV_SEQ);
		}
	CHECK("wire: every kind, with and without loc, stk and seq, unpacks as packed", all);
	CHECK("wire: an event takes the words its header and lmt_ev_words say", words);
	CHECK("wire: pack stores nothing past LMT_EV_WMAX words", bounded);
	CHECK("wire: an allocation's naddr is word lmt_ev_naddr_w", naddr);
	CHECK("wire: a realloc's oaddr is two words after its naddr", oaddrw);
	CHECK("wire: seq is the last word, sent only when numbered", seqw);
}

/* The sizes the format is for: a free in the GC 3 words, an allocation
 * in a trace 4, a realloc numbered with a stack 8. */
static void sizes(void)
{
	__u64 w[LMT_EV_WMAX];
	struct lmt_ev fr = { .kind = LMT_FREE, .src = LMT_SRC_INTERNAL,
			     .oaddr = 0x7f0000001000ULL, .osize = 64 };
	struct lmt_ev al = { .kind = LMT_ALLOC, .src = LMT_SRC_TRACE, .loc = 17,
			     .flags = LMT_EV_MCOFS, .line = 0x2c0,
			     .naddr = 0x7f0000002000ULL, .nsize = 64 };
	struct lmt_ev re = { .kind = LMT_REALLOC, .src = LMT_SRC_LFUNC,
			     .loc = 0x7f0000003000ULL, .line = 12,
			     .oaddr = 0x7f0000004000ULL, .osize = 64,
			     .naddr = 0x7f0000005000ULL, .nsize = 128, .stk = 5 };

	CHECK("wire: a free in the GC is 3 words", lmt_ev_pack(w, &fr, 0) == 3);
	CHECK("wire: an allocation in a trace is 4 words", lmt_ev_pack(w, &al, 0) == 4);
	CHECK("wire: a realloc with its stack, numbered, is 8 words",
	      lmt_ev_pack(w, &re, 42) == LMT_EV_WMAX);
}

/* Events one after another, as in a batch, read back in order. */
static void batch(void)
{
	__u64 w[4 * LMT_EV_WMAX];
	struct lmt_ev in[3] = {
		{ .kind = LMT_ALLOC, .src = LMT_SRC_LFUNC, .loc = 0x7f0000010000ULL,
		  .line = 7, .naddr = 0x7f0000020000ULL, .nsize = 40 },
		{ .kind = LMT_FREE, .src = LMT_SRC_INTERNAL, .oaddr = 0x7f0000020000ULL,
		  .osize = 40 },
		{ .kind = LMT_RET, .src = LMT_SRC_INTERNAL, .loc = 0x8000ffffc9000001ULL,
		  .naddr = 0x7f0000030000ULL },
	}, out;
	__u32 off = 0, k = 0, n;
	int ok = 1;

	for (int i = 0; i < 3; i++)
		off += lmt_ev_pack(w + off, &in[i], 0);
	for (__u32 at = 0; at < off; at += n, k++) {
		n = lmt_ev_unpack(w + at, off - at, &out);
		if (!n || k >= 3 || !same(&out, &in[k])) {
			ok = 0;
			break;
		}
	}
	CHECK("wire: a batch's events read back in order, to its last word", ok && k == 3);
}

/* What does not make an event: unpacks to 0. */
static void malformed(void)
{
	__u64 w[LMT_EV_WMAX];
	struct lmt_ev e = { .kind = LMT_ALLOC, .src = LMT_SRC_TRACE, .loc = 17,
			    .naddr = 0x7f0000002000ULL, .nsize = 64 }, u;
	__u32 n = lmt_ev_pack(w, &e, 0);
	__u64 h = w[0];

	CHECK("wire: an event cut short does not unpack", !lmt_ev_unpack(w, n - 1, &u));
	CHECK("wire: nothing left does not unpack", !lmt_ev_unpack(w, 0, &u));
	w[0] = h & ~0xffULL;
	CHECK("wire: kind 0 does not unpack", !lmt_ev_unpack(w, n, &u));
	w[0] = (h & ~0xffULL) | 5;
	CHECK("wire: a kind above LMT_RET does not unpack", !lmt_ev_unpack(w, n, &u));
	w[0] = (h & ~(0xffULL << 24)) | (__u64)(n + 1) << 24;
	CHECK("wire: a length its flags do not give does not unpack",
	      !lmt_ev_unpack(w, LMT_EV_WMAX, &u));
	w[0] = h | (__u64)LMT_EV_STK << 16;
	CHECK("wire: a flag whose word is missing does not unpack",
	      !lmt_ev_unpack(w, LMT_EV_WMAX, &u));
	w[0] = 0;
	CHECK("wire: a zero word does not unpack", !lmt_ev_unpack(w, LMT_EV_WMAX, &u));
}

int main(void)
{
	round_trips();
	sizes();
	batch();
	malformed();
	return fails != 0;
}
