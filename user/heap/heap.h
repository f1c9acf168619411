/* luamemtrace heap: what a LuaJIT heap holds, and who holds it.
 *
 * A snapshot is taken in two steps. copy.c, with the target stopped
 * (stop.c: guardian-covered, always continued), walks every GC object of
 * a VM (gc.root, which holds the main thread, the udata after it and the
 * traces; gc.mmudata; the string table's chains) and copies what the
 * analysis needs into a struct heap: each object's header and the parts
 * that hold references (array and hash parts, upvalue refs, prototype
 * constants, stack slots, trace IR constants). The target runs again
 * before any analysis: edges.c, mark.c and view_text.c read the copy only.
 *
 * The copy is untrusted input: every object's fields are read from its
 * bytes with bounds (heap_u8/u32/u64 return 0 past rawlen), every index
 * from them is checked, every walk is capped (heap_caps.h).
 */
#ifndef LMT_HEAP_H
#define LMT_HEAP_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "target/layout.h"
#include "util/u64set.h"

/* -- Caps (docs/security.md) ------------------------------------------------ */

/* GC objects of one VM: 2^26 (64M) objects is ~4 GB of the smallest ones,
 * above what a LuaJIT heap of 2.1 GC64 holds in practice. */
#define LMT_HEAP_OBJS_MAX (1u << 26)
/* Bytes copied for one VM (headers, array/hash parts, stacks): a heap's
 * references are a fraction of its size; 4 GiB bounds our memory. */
#define LMT_HEAP_COPY_MAX (4ull << 30)
/* Array slots and hash nodes copied of one table: LuaJIT's LJ_MAX_ASIZE
 * and LJ_MAX_HBITS are 2^27 and 2^26; a table past 2^24 is counted, its
 * references past the cap not followed. */
#define LMT_HEAP_TAB_SLOTS_MAX (1u << 24)
/* Bytes of a prototype's debug names kept: its upvalue names
 * (proto_uvinfo: sizeuv NUL-terminated names, at most 60 upvalues) and
 * the names of its locals after them (varinfo), to the prototype's end
 * (sizept). A name past it is "#N" for an upvalue, the slot's number for
 * a local. */
#define LMT_HEAP_DEBUG_KEEP 4096
/* Edges of the reachable graph kept for the dominator tree (8 bytes
 * each): past it the tree is not built, said. */
#define LMT_HEAP_EDGES_MAX (1u << 28)
/* Steps of a path named (a path is a shortest one from the roots); a
 * longer one is shown from "..." on. */
#define LMT_HEAP_PATH_STEPS 48
/* Stack slots of one thread: LJ_STACK_MAX is 65500. */
#define LMT_HEAP_STACK_MAX 65536
/* Bytes of a string kept (names in paths, __mode): longer ones are cut. */
#define LMT_HEAP_STR_KEEP 256
/* String hash slots: str.mask is 32 bits; LJ_MAX_STRTAB is 2^26. */
#define LMT_HEAP_STRTAB_MAX (1u << 26)
/* C types of the FFI's table (CTID_MAX is 65535). */
#define LMT_HEAP_CTYPES_MAX 65536
/* Steps through a C type's attributes, pointers and arrays when it is
 * named (a table that loops is named "ctype #N" at the cap). */
#define LMT_HEAP_CTYPE_DEPTH 8
/* Leak suspects (suspects.c): an object, not a root, retaining at least
 * this percentage of the reachable bytes, with no child in the dominator
 * tree that does (the point where the bytes accumulate): Eclipse MAT's
 * rule, at MAT's own default share being 10%, 20% here so that a small
 * heap's few big modules are not all flagged. */
#define LMT_HEAP_SUSPECT_PCT 20
/* Frames of a heap's flame graph (view_flame.c): the objects with the
 * largest retained sizes get a frame of their own, each at most this deep
 * in the dominator tree; the rest of the bytes go to their nearest
 * ancestor that has one (the page stays a few MB). */
#define LMT_HEAP_FLAME_FRAMES 10000
#define LMT_HEAP_FLAME_DEPTH 32
/* Bytes of one frame's name (a path step, or a path): longer ones cut. */
#define LMT_HEAP_FLAME_LABEL 160
/* --diff: B's largest retainers compared with A's (and A's kept by path
 * to match them), and groups of the two (by name): bounded work and
 * memory; past the groups' cap objects are counted, said. */
#define LMT_HEAP_DIFF_PATHS 10000
#define LMT_HEAP_DIFF_GROUPS 65536
/* How long the target may stay stopped while it is copied, in ms: the
 * guardian's deadline (session/guard.h LMT_HOLD_MAX_MS) ends any stop anyway;
 * past this the copy ends, said incomplete. */
#define LMT_HEAP_STOP_MS 1500
/* How long to wait for every thread of the target to stop, in ms. */
#define LMT_HEAP_STOPWAIT_MS 1000
/* How long the copy made while the target runs may take, in ms (a 1 GB
 * heap: ~2 s here, docs/benchmarks.md): past it, what is left is read
 * with the target stopped. */
#define LMT_HEAP_RUNCOPY_MS 30000
/* Objects a copy made while the target runs may find unreadable, of an
 * unknown type or repeated before it ends (its lists change under it,
 * freed objects' pointers are stale): the stopped copy reads the rest. */
#define LMT_HEAP_RUN_JUNK 256
/* Stops tried for one snapshot: a stop can land inside an allocation or
 * a sweep step (a list being relinked, gc.total not yet updated: on a
 * target that only allocates, about 1 stop in 6, docs/heap.md); a copy
 * that does not add up is taken again after the target ran on a while,
 * LMT_HEAP_RETRY_MS at most, drawn at random (a step that lasts is not
 * met again in step). No new try once the copy's stops add up to
 * LMT_HEAP_TRIES_MS. Each stop is bounded on its own (LMT_HEAP_STOP_MS). */
#define LMT_HEAP_TRIES 8
#define LMT_HEAP_RETRY_MS 32
#define LMT_HEAP_TRIES_MS 3000
/* Passes made while the target runs before the final stop (capture.c):
 * each stops the target to look up the pages it wrote and clear the
 * bits, and reads them again while it runs on; the next pass finds what
 * it wrote meanwhile. They end when a pass finds no more than
 * LMT_HEAP_PASS_DONE pages (the final stop then has about as few to
 * read), after LMT_HEAP_PASSES, or after LMT_HEAP_PASS_MS (or twice the
 * copy made while it ran, if longer): a target whose collector or growing
 * heap writes most pages all along never gets there, and its final stop
 * reads them all. */
#define LMT_HEAP_PASSES 32
#define LMT_HEAP_PASS_MS 10000
#define LMT_HEAP_PASS_DONE 2048
/* Pages of the target's writable mappings a stop looks up for memory
 * written outside the kept blocks (16 GiB of address space, 32 MiB of
 * pagemap): past it, that memory is read after the target runs on and
 * checked (LMT_HEAP_UNVERIFIED). */
#define LMT_HEAP_FRESH_SCAN_PAGES (1u << 22)
/* Reads of the running target noted to be checked unwritten since the
 * stop (a copy made from the stop's image, heap.h's hpages_verify): past
 * it the copy is not known to be of one instant and is made stopped. */
#define LMT_HEAP_UNVERIFIED (1u << 20)
/* Copies from a stop's image tried for one snapshot: one that read what
 * the target wrote since the stop is taken again (what it read is kept
 * now); past this, the copy is made stopped. Each stop is bounded
 * (LMT_HEAP_STOP_MS). */
#define LMT_HEAP_IMAGE_TRIES 2
/* The passes' stops, in all, in ms: past it they end (each is bounded by
 * LMT_HEAP_STOP_MS; the final stop comes next). */
#define LMT_HEAP_PASS_STOPS_MS 3000
/* Of what the cache may keep, the share (1/N) blocks read because the
 * target wrote them outside the copy may take: memory that is not the
 * VM's (C buffers, stacks) leaves room for the VM's own. */
#define LMT_HEAP_FRESH_SHARE 2
/* Where the lock that keeps one snapshot of a process at a time lives
 * (capture.c): root's, made 0700. */
#define LMT_HEAP_LOCK_DIR "/run/luamemtrace"
/* Memory wanted free beyond the target's anonymous memory before it is
 * forked for a copy-on-write copy (cow.c): its writes while the copy is
 * read copy at most that much, charged to it and its cgroup. */
#define LMT_HEAP_COW_ROOM (64ULL << 20)
/* Descriptors of the target looked at for a userfaultfd before it is
 * forked (one that hears of forks would never let the fork end): past
 * it, no fork. */
#define LMT_HEAP_COW_FDS 65536
/* Our nice value while the target is stopped (it waits for our CPU time;
 * bounded by LMT_HEAP_STOP_MS): ours first on a busy host. */
#define LMT_HEAP_STOP_NICE (-20)

/* -- The copy --------------------------------------------------------------- */

enum {
	HOBJ_REACHED = 1,  /* marked from the GC's roots (mark.c) */
	HOBJ_MMUDATA = 2,  /* on gc.mmudata: awaiting __gc */
	HOBJ_SHORT = 4,    /* a part over a cap or unreadable: not all copied */
	HOBJ_MAIN = 8,     /* the main thread (its lua_State is in GG_State) */
};

struct hobj {
	uint64_t addr;
	uint64_t size;  /* bytes as LuaJIT accounts them (lj_gc.c's frees) */
	uint64_t raw;   /* its copied bytes: arena + raw */
	uint32_t rawlen;
	uint8_t gct;    /* ~itype */
	uint8_t flags;  /* HOBJ_* */
	uint16_t pad;
};

/* What a type's copied bytes hold (struct hobj.raw), after the header
 * (the object's first hdr bytes, hdr per type: layout's sizeof):
 *   str    its first LMT_HEAP_STR_KEEP bytes
 *   tab    array slots (asize, capped), then hash nodes (hmask+1, capped)
 *   func   Lua: upvalue refs; C: upvalue TValues (nupvalues)
 *   proto  its GC constants, kgc[-sizekgc .. -1], then its debug
 *          names from uvinfo: upvalue names, then varinfo (at varinfo -
 *          uvinfo), LMT_HEAP_DEBUG_KEEP bytes at most
 *   thread stack slots [stack, top), capped, then its frames' link slot
 *          indexes (uint32, the top frame first)
 *   trace  IR [nk, REF_TRUE) */

/* Counts of what was skipped, each said in the report. */
struct hcounts {
	uint64_t over_objs;    /* objects past LMT_HEAP_OBJS_MAX */
	uint64_t over_bytes;   /* objects not copied: LMT_HEAP_COPY_MAX */
	uint64_t short_objs;   /* objects with a part over a cap or unreadable */
	uint64_t unreadable;   /* object addresses that could not be read */
	uint64_t bad_type;     /* objects with an unknown type tag */
	uint64_t list_cut;     /* lists ended by a repeat or the cap */
	uint64_t dup;          /* objects found twice (lists overlap) */
	uint64_t timed_out;    /* 1: the copy ended at its time cap
				* (LMT_HEAP_STOP_MS; from an image,
				* LMT_HEAP_RUNCOPY_MS) */
	uint64_t dangling;     /* references to no walked object */
};

struct heap {
	const struct lj_variant *var;
	uint64_t L, g;
	uint8_t *gg;          /* GG_State copy (var->h.gg_size bytes) */
	size_t gglen;
	struct hobj *o;
	size_t n, cap;
	uint8_t *arena;
	size_t alen, acap;
	struct u64map at;     /* address -> index + 1 */
	uint64_t *traces;     /* J->trace[]: a trace number's GCtrace */
	uint32_t ntraces;
	uint8_t *ctypes;      /* the FFI's C type table (ct_sizeof each) */
	uint32_t nctypes;
	uint64_t finalizer;   /* the FFI's cdata finalizer table (weak keys) */
	/* The VM's own accounting (copied with the objects) */
	uint64_t gc_total;
	uint64_t other[8];    /* HOTHER_*: accounted memory besides objects */
	uint64_t pause_ns;    /* the target stopped, ns (0: not stopped by us) */
	int stopped_before;   /* the target was stopped already: left so */
	uint32_t pid;         /* the process copied (0: unknown, a version 1 file) */
	struct hcounts c;
	/* Reachability (mark.c) */
	uint64_t reached, reached_bytes;
	uint8_t *wk;          /* per object: a table's __mode bits | 0x80 once
			       * known (edges.c; NULL: not kept) */
	uint32_t *thr;        /* the threads' indexes (open upvalues' values) */
	size_t nthr;
	struct hedge *par;    /* the edge an object was first reached by
			       * (breadth first: a shortest path), per object */
	/* Dominator tree (dom.c) */
	uint32_t *idom;       /* per object: its immediate dominator (h->n: the
			       * super-root; UINT32_MAX: not reached) */
	uint64_t *retained;   /* per object: bytes freed if it were */
	uint64_t edges;       /* edges of the reachable graph */
	int dom_over;         /* 1: over LMT_HEAP_EDGES_MAX, no tree */
	/* Joined with a trace (join.c), or NULL; freed by join_free, which
	 * join.c sets (heap_free calls it: model.c is below join.c) */
	struct hjoin *join;
	void (*join_free)(struct hjoin *j);
};

enum {
	HOTHER_GG,      /* GG_State (global_State, jit_State, dispatch) less
			 * the main lua_State */
	HOTHER_STRTAB,  /* the string hash table */
	HOTHER_TMPBUF,  /* g->tmpbuf */
	HOTHER_JIT,     /* J's trace, IR, snapshot and snapshot map arrays */
	HOTHER_CTS,     /* the FFI's CTState, C type table and callback ids */
	HOTHER_LIGHTUD, /* lightuserdata segments */
	HOTHER_N
};
extern const char *const heap_other_name[HOTHER_N];

/* Type tags' names, by ~itype ("?" if unknown). */
const char *heap_type_name(unsigned gct);

/* -- Reading the copy ------------------------------------------------------ */

static inline const uint8_t *heap_raw(const struct heap *h, const struct hobj *o)
{
	return h->arena + o->raw;
}
/* Fields of an object's copy: 0 past its copied bytes. */
uint64_t heap_u64(const struct heap *h, const struct hobj *o, uint64_t off);
uint32_t heap_u32(const struct heap *h, const struct hobj *o, uint64_t off);
uint16_t heap_u16(const struct heap *h, const struct hobj *o, uint64_t off);
uint8_t heap_u8(const struct heap *h, const struct hobj *o, uint64_t off);
/* The same of the GG_State copy, at an offset from g. */
uint64_t heap_g64(const struct heap *h, unsigned off);
uint32_t heap_g32(const struct heap *h, unsigned off);
/* A reference (GCRef, MRef; GCSize too) at the variant's width
 * (target/ljref.h), of an object's copy or of GG_State's: 0 past it. */
uint64_t heap_ref(const struct heap *h, const struct hobj *o, uint64_t off);
uint64_t heap_gref(const struct heap *h, unsigned off);
/* The GC object a TValue holds (tvisgcv), or 0. */
uint64_t heap_tv_gc(const struct heap *h, uint64_t tv);
/* Thread th's copied stack: its slots (TValues, from sizeof_L), *nslot
 * of them; and the slots holding a frame's link (the PC or size of
 * lj_frame.h's frame; without FR2, GC64 off, the frame's function is
 * untyped in its low 32 bits): *nframe uint32 slot indexes after the
 * slots, the top frame first, from L->base down (copy.c; a file of an
 * older build has them only without FR2). */
const uint8_t *heap_stack(const struct heap *h, const struct hobj *th, uint64_t *nslot,
			  const uint8_t **frames, uint64_t *nframe);
/* The object at addr: its index, or -1. */
long heap_find(const struct heap *h, uint64_t addr);
/* A string object's kept bytes and their length (cut at
 * LMT_HEAP_STR_KEEP; *cut set if so). */
const char *heap_str(const struct heap *h, const struct hobj *o, uint32_t *len, int *cut);
void heap_free(struct heap *h);

/* -- The model (model.c) ---------------------------------------------------- */

/* Adds an object and its copied bytes: its index, or -1 (a cap: counted;
 * -2: out of memory). */
long heap_add(struct heap *h, uint64_t addr, uint8_t gct, const void *raw, size_t len);
/* Room for n objects and bytes of copies, touched now (a copy made
 * stopped then takes no page fault for them): 0 or -1 (no memory). */
int heap_reserve(struct heap *h, size_t n, size_t bytes);
/* Appends bytes to the last object's copy: 0 or -1 (cap, counted). */
int heap_append(struct heap *h, const void *raw, size_t len);

/* -- Copying a VM (copy.c) -------------------------------------------------- */

/* Copies the VM whose main lua_State is L (variant var) of pid, stopped
 * (the caller stops it). 0, or -errno (ENOMEM). What could not be read is
 * counted in h->c. */
int heap_copy(pid_t pid, const struct lj_variant *var, uint64_t L, uint64_t deadline_ns,
	      struct heap *h);
struct hpages;
/* The same through the block cache pg (pages.c), kept for the caller:
 * a copy made while the target ran fills it (capture.c). h is empty or
 * only reserved (heap_reserve). */
int heap_copy_in(pid_t pid, const struct lj_variant *var, uint64_t L, uint64_t deadline_ns,
		 struct hpages *pg, struct heap *h);
/* Object sizes as LuaJIT accounts them, from the copy (after heap_copy). */
void heap_sizes(struct heap *h);

/* -- Reading the target (pages.c) ------------------------------------------ */

/* Bytes of the target read at once and kept: objects lie close together,
 * a block serves many. */
#define HPAGES_BLOCK (16u << 10)
/* The page a side copy holds (hpages_preload): x86-64's. */
#define HPAGES_SIDE 4096u

struct pmaps;
struct hrun {
	uint64_t addr;   /* in the target, within one block */
	uint32_t len;
};

struct hpages {
	struct u64map m; /* block address + 1 -> its copy */
	uint64_t bytes;  /* kept, under LMT_HEAP_COPY_MAX */
	uint64_t reads;  /* blocks read */
	uint64_t direct; /* reads not served by a block */
	void **spare;    /* blocks made ahead (hpages_spare), used first */
	size_t nspare;
	uint64_t allow;  /* bytes it may keep (0: LMT_HEAP_COPY_MAX; hpages_allow) */
	struct hrun *run;/* pages to read again (hpages_scan) */
	size_t nrun, caprun;
	int running;     /* the target runs: a walk that meets more than
			  * LMT_HEAP_RUN_JUNK bad objects, or copies more
			  * than allow, ends (copy.c) */
	uint64_t *fresh; /* blocks not kept holding pages written since
			  * hdirty_clear, to read (hpages_scan_fresh) */
	size_t nfresh, capfresh;
	int frozen;      /* the cache is the image of a stop the target has
			  * run on from: what it reads of the target is
			  * noted (unv), to be checked unwritten since */
	struct hrun *unv;/* read after the stop (frozen): hpages_verify */
	size_t nunv, capunv;
	int unv_over;    /* more than LMT_HEAP_UNVERIFIED of them */
	uint64_t fresh_bytes; /* kept blocks read by hpages_read_fresh */
	struct ptscan *pt; /* the target's own page table entries, read
			    * where pagemap calls pages written (or NULL) */
	struct u64map side; /* page + 1 -> its copy (HPAGES_SIDE bytes):
			     * pages hpages_preload read that their block,
			     * cut by a hole, does not hold */
	uint64_t pt_cleared; /* pages those said unwritten */
};

/* proc_read through the cache: 0 or -errno. Reads reaching memory a
 * block could not hold, or past LMT_HEAP_COPY_MAX, go to the target
 * directly. */
int hpages_read(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len);
/* proc_read_some through the cache (as much as is readable, up to len):
 * bytes read, or -errno. */
ssize_t hpages_read_some(struct hpages *c, pid_t pid, uint64_t addr, void *buf, size_t len);
void hpages_free(struct hpages *c);
/* A VM of gc_total bytes is copied through c: c may keep twice that more
 * (a copy made while the target runs can follow freed memory's stale
 * pointers: what it reads past that is not kept). */
void hpages_allow(struct hpages *c, uint64_t gc_total);
/* Makes n blocks ahead, touched, and room for n more in the map: a copy
 * made stopped then takes no page fault for the blocks it misses. */
void hpages_spare(struct hpages *c, size_t n);

/* Reads into c every block of pid's private writable mappings of m (the
 * VMs' memory, heap_copy's) that holds a page it has (present or
 * swapped, pid's pagemap), for a copy then made of c alone (a fork's
 * child that is then gone, cow.c). 0, or -errno: E2BIG (over
 * LMT_HEAP_FRESH_SCAN_PAGES of address space, or LMT_HEAP_COPY_MAX kept),
 * ETIMEDOUT (past deadline): what it read is kept. *bytes: read. */
int hpages_preload(struct hpages *c, pid_t pid, const struct pmaps *m, uint64_t deadline,
		   uint64_t *bytes);

/* Pages of the target's writable mappings looked up in one pagemap read
 * (hpages_scan_fresh), in bytes of the target. */
#define HFRESH_SCAN (8u << 20)
/* Blocks whose pages are looked up in one pagemap read (64 KiB of it). */
#define HREFRESH_RUN 2048u
/* Runs of written pages read again in one system call (IOV_MAX). */
#define HREREAD_IOV 1024

struct hrefresh {
	uint64_t blocks; /* blocks kept when the target stopped */
	uint64_t pages;  /* their pages */
	uint64_t dirty;  /* pages written since hdirty_clear: read again */
	uint64_t dropped;/* blocks whose pagemap entries could not be read:
			  * dropped, read again as the copy asks */
	uint64_t reads;  /* system calls that read them again */
	uint64_t fresh;  /* pages written since hdirty_clear in blocks not
			  * kept (hpages_scan_fresh) */
	uint64_t fresh_blocks; /* their blocks, read whole */
	uint64_t late;   /* blocks dropped unread: the deadline passed */
	uint64_t fresh_over; /* fresh blocks not read: over their share of
			  * the cache (LMT_HEAP_FRESH_SHARE) */
};

/* With the target stopped, after hdirty_clear and a copy while it ran:
 * reads again each kept page the target wrote since (its soft-dirty bit),
 * so that the cache holds the stopped target's bytes; blocks whose
 * entries cannot be read are dropped. 0, or -errno (the pagemap cannot be
 * opened, ETIMEDOUT past deadline): then the cache is emptied (everything
 * read again as the copy asks). */
int hpages_refresh(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r);
/* hpages_refresh in two: the kept pages written since hdirty_clear looked
 * up (c->run; an error as hpages_refresh's), then read again (a page that
 * cannot be read, or not reached by the deadline: its block dropped). With the target stopped both, or
 * (capture.c's passes) the look-up stopped, before hdirty_clear, and the
 * reads while it runs on: what it writes after the clear is seen by the
 * next look-up. */
int hpages_scan(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r);
void hpages_reread(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r);
/* Empties the cache, its blocks kept as spares (hpages_spare). */
void hpages_recycle(struct hpages *c);
/* After hpages_scan, the target stopped: the pages of its private
 * writable mappings (maps read again: a mapping made since counts) written
 * since hdirty_clear whose blocks are not kept (memory the target
 * allocated, or the copy had not reached) looked up, as blocks to read
 * (c->fresh). Then hpages_read_fresh reads them, stopped or (a pass)
 * running on, within what c may keep. 0, or -errno (nothing noted). */
int hpages_scan_fresh(struct hpages *c, pid_t pid, const struct pmaps *m, uint64_t deadline,
		      struct hrefresh *r);
void hpages_read_fresh(struct hpages *c, pid_t pid, uint64_t deadline, struct hrefresh *r);
/* Is what the cache read of the target since c->frozen was set (blocks it
 * missed, reads past it) unwritten since the last hdirty_clear, so that it
 * is the stopped target's? 0 (*stale: pages written since, or no longer
 * there), or -errno (not known). Empties the list. */
int hpages_verify(struct hpages *c, pid_t pid, uint64_t *stale);

/* -- Soft-dirty bits (dirty.c) -------------------------------------------- */

struct ptscan;

/* Does this kernel keep soft-dirty bits (tried once on a page of ours)?
 * 1, or 0 with why. */
int hdirty_usable(char *why, size_t len);
/* Clears pid's soft-dirty bits (its bound /proc directory): 0 or -errno. */
int hdirty_clear(pid_t pid);
/* pid's pagemap, opened through its bound /proc directory: fd or -errno. */
int hdirty_open(pid_t pid);
/* dirty[k] = 1 if page k from addr (page aligned) was written since the
 * clear, or is neither present nor swapped: 0 or -errno. With pt (NULL:
 * pagemap alone), a present page pagemap calls written that its own entry
 * says unwritten is not (a mapping new or grown since the clear is
 * written whole for pagemap: probes/ptscan.h), counted in *cleared. */
int hdirty_pages(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		 uint8_t *dirty);
/* written[k] = 1 if page k from addr was written since the clear and is
 * there (present or swapped: memory never touched is not): 0 or -errno.
 * pt, cleared: as hdirty_pages'. */
int hdirty_written(int pmfd, struct ptscan *pt, uint64_t *cleared, uint64_t addr, size_t n,
		   uint8_t *written);

/* -- Stopping the target (stop.c) ------------------------------------------- */

struct inj_rec;
struct hstop {
	int stops_fd;    /* the stops map (session/guard.h) */
	struct inj_rec *inj; /* calls injected under its stops (cow.c), shared
			      * with the guardian; NULL if none can be */
	pid_t guardian;
	int pidfd;
	int held;        /* our stop is in the map */
	int was_stopped; /* it was stopped before us: neither stopped nor continued */
	uint64_t t0;     /* when the stop was made (CLOCK_BOOTTIME ns) */
	uint32_t seq;    /* stops made: each its own key in the map */
};

/* Starts the guardian over a new stops map. 0 or -errno. */
int hstop_init(struct hstop *s, pid_t pid, int pidfd);
/* Stops pid (every thread) under the guardian. 0, or -errno (ETIMEDOUT:
 * it did not stop in time: it was continued). */
int hstop_stop(struct hstop *s, pid_t pid);
/* Continues it (unless another tracer holds it, or it was stopped before
 * us): ns it was stopped; *expired set if the guardian continued it first. */
uint64_t hstop_cont(struct hstop *s, int *expired);
void hstop_end(struct hstop *s);

/* -- A copy-on-write copy (cow.c) ------------------------------------------- */

/* May pid be forked for its copy: calls can be injected here, no one
 * else traces it, no seccomp filter (it may forbid the fork, or kill it
 * for one), and room for what its writes copy while the child lives (its
 * anonymous memory and LMT_HEAP_COW_ROOM) in the machine's available
 * memory and under each memory limit of its cgroup (v2)? 0, or -1 with
 * why (a phrase). */
int hcow_usable(pid_t pid, char *why, size_t n);

struct hcow {
	pid_t child;      /* the copy: stopped for good, bound (proc_bind) */
	int cfd;          /* its pidfd */
	uint64_t fork_ns; /* the stop the fork took */
	uint64_t reap_ns; /* the stop the reaping took */
	int unreaped;     /* 1: left to the guardian (a zombie until then) */
};

/* Stops pid (s: its guardian and record), injects the fork, continues
 * it: 0 with c->child to read as pid's memory at the fork, or -errno
 * (EALREADY: stopped by someone else; ETIMEDOUT: the guardian continued
 * it first; a fork that failed in it: its errno), nothing left. *expired
 * as hstop_cont's. */
int hcow_fork(struct hcow *c, struct hstop *s, pid_t pid, int *expired);
/* Kills the copy and reaps it (a stop of pid for a wait4 injected). */
void hcow_end(struct hcow *c, struct hstop *s, pid_t pid);

/* -- A process's snapshot at a bounded pause (capture.c) -------------------- */

struct pmaps;
struct vmscan;
struct hcapture {
	int soft;         /* 1: copied while it ran, written pages read again */
	char why[160];    /* why not, if not */
	struct hrefresh r;
	uint64_t run_ns;  /* the copy while it ran */
	uint64_t pause_ns;/* stopped, in all */
	int expired;      /* the guardian continued it first */
	int tries;        /* stops made (a copy that did not add up is
			   * taken again, LMT_HEAP_TRIES) */
	int torn;         /* the last did not add up either */
	uint64_t pause_max; /* the longest stop (the passes' too) */
	uint64_t stop_max;  /* the longest of the copy's stops (tries) */
	int passes;       /* passes made (LMT_HEAP_PASSES) */
	uint64_t pass_pages; /* pages they read again */
	uint64_t pass_ns; /* stopped in them, in all */
	int was_stopped;  /* stopped by someone else: left so */
	int image;        /* 1: copied from the stop's image after it ran on */
	char image_why[160]; /* why a copy from the image was not tried */
	uint64_t image_ns;   /* those copies, in all */
	uint64_t image_reads;/* their reads of the running target, checked */
	uint64_t image_stale;/* pages those found written since the stop */
	int image_tries;  /* copies from an image found stale */
	uint64_t own_cleared; /* pages pagemap called written that their own
			       * entries said unwritten (probes/ptscan.h) */
	char own_why[160];    /* why pagemap's word alone, if so */
	int cow;              /* 1: copied from a copy-on-write fork (cow.c) */
	char cow_why[160];    /* why not, if not */
	uint64_t cow_ns;      /* the last fork's child's life: read whole */
	uint64_t cow_bytes;   /* what was read of it */
	uint64_t reap_max;    /* the longest stop that reaped a fork */
	int unreaped;         /* a fork left to the guardian to reap */
};

/* How heap_capture copies. */
enum {
	HCAP_STOPPED = 1, /* the whole copy with the target stopped */
	HCAP_NO_FORK = 2, /* no copy-on-write fork: soft-dirty bits, or stopped */
};
/* Copies the VMs sc found in pid (hs[i] for sc->v[i]; a VM gone since is
 * said and left empty) with the target stopped as briefly as it can be:
 * for a copy-on-write fork (cow.c) where one may be made, else as
 * soft-dirty bits allow; how: HCAP_*. 0, or an exit status having said
 * why. */
int heap_capture(pid_t pid, int pidfd, const struct pmaps *m, const struct vmscan *sc,
		 const char *variant, int how, struct heap *hs, struct hcapture *cap);
/* One line to f: how it was copied, the pause. */
void heap_capture_say(pid_t pid, const struct hcapture *cap, FILE *f);

/* -- Edges, exactly those lj_gc.c marks (edges.c) --------------------------- */

enum hedge_kind {
	HE_ROOT,      /* from the super-root: a, which root (HROOT_*), b index */
	HE_ARRAY,     /* t[a] */
	HE_HKEY,      /* a key of t, b: its value's raw TValue */
	HE_HVAL,      /* t[key], b: the key's raw TValue */
	HE_MT,        /* [metatable] */
	HE_ENV,       /* [env] */
	HE_UPVAL,     /* a function's upvalue a */
	HE_PROTO,     /* a Lua function's prototype */
	HE_KGC,       /* a prototype's constant a */
	HE_CHUNK,     /* a prototype's chunk name */
	HE_PTRACE,    /* a prototype's trace */
	HE_UVVAL,     /* a closed upvalue's value */
	HE_STACK,     /* a thread's stack slot a */
	HE_TRACE,     /* a trace's constant, link, or start prototype */
};
enum { HROOT_MAINTH, HROOT_MAINENV, HROOT_REGISTRY, HROOT_GCROOT,
       HROOT_CURL, HROOT_MMUDATA };

struct hedge {
	uint32_t from, to; /* from: the super-root is h->n */
	uint8_t kind;
	uint64_t a, b;
};

/* Calls fn for each strong reference of object i (i == h->n: the roots),
 * in lj_gc.c's order; weak parts (__mode) are left out. A reference to
 * an address no object has is counted (h->c.dangling) once per call
 * chain, and not given. Returns what fn last returned if non-zero. */
typedef int (*hedge_fn)(void *ctx, const struct hedge *e);
int heap_edges(struct heap *h, uint32_t i, hedge_fn fn, void *ctx);
/* The table's __mode: LJ_GC_WEAKKEY (8) | LJ_GC_WEAKVAL (16) bits. */
int heap_weak(const struct heap *h, const struct hobj *t);

/* -- Reachability (mark.c) -------------------------------------------------- */

/* Marks every object reachable from the roots (HOBJ_REACHED), counting
 * them in h->reached. 0 or -ENOMEM. */
int heap_mark(struct heap *h);

/* -- Dominator tree (dom.c) ----------------------------------------------- */

/* Builds h->idom and h->retained over the reached objects (after
 * heap_mark): Cooper, Harvey and Kennedy's iterative algorithm over a
 * reverse postorder from the super-root. 0, -ENOMEM, or -E2BIG (edges
 * over LMT_HEAP_EDGES_MAX: h->dom_over set). */
int heap_dom(struct heap *h);

/* -- Names (paths.c) --------------------------------------------------------- */

/* Writes object i's path from the roots as a Lua programmer writes it
 * (package.loaded["app.cache"].users["u42"], registry[12], upvalue cache
 * of function app.lua:14, ...) into buf (cut to len). */
void heap_path(const struct heap *h, uint32_t i, char *buf, size_t len);
/* chunk:line of a Lua function or prototype object i ("?" if unknown). */
void heap_where(const struct heap *h, uint32_t i, char *buf, size_t len);

/* -- Views (view_text.c) ---------------------------------------------------- */

struct hview {
	int top; /* rows of each list */
};
void heap_view_text(struct heap *h, const struct hview *v, FILE *f);
/* cdata by C type, largest tables (groups.c). */
void heap_view_groups(struct heap *h, const struct hview *v, FILE *f);
/* C type id's name as lj_ctype_repr writes it, from the copy's C type
 * table ("ctype #N" when the table or the name is not in the copy). */
void heap_ctype_name(const struct heap *h, uint32_t id, char *buf, size_t len);
/* Leak suspects (suspects.c, LMT_HEAP_SUSPECT_PCT), after heap_dom. */
void heap_view_suspects(struct heap *h, FILE *f);
/* The flame graph page of the copies hs[0..n) (marked, dominators built),
 * labels[i] the root frame of each when n > 1 (view_flame.c): 0, or -1
 * (out of memory, or a copy without a dominator tree: said on stderr). */
int heap_view_flame(struct heap *hs, size_t n, const char *const *labels, const char *title,
		    FILE *out);

/* What two snapshots differ by (view_diff.c): VMs paired by their
 * lua_State; by type, by retention path, by group, and the objects of a
 * still live in b (same address and type). An exit status. */
int heap_view_diff(struct heap *a, size_t na, struct heap *b, size_t nb, const struct hview *v,
		   FILE *f);

/* The reachable graphs of hs[0..n) as one Chrome DevTools .heapsnapshot
 * (view_chrome.c); several VMs: a synthetic node per VM under the root,
 * named labels[k]. An exit status. */
int heap_view_chrome(struct heap *hs, size_t n, const char *const *labels, FILE *f);

/* -- Snapshot files given (files.c) ------------------------------------------ */

enum { HEAP_TEXT, HEAP_FLAME, HEAP_DIFF, HEAP_CHROME };
/* Snapshot files at most in one view (a directory's *.lmh included). */
#define LMT_HEAP_FILES_MAX 4096
/* luamemtrace heap [--flamegraph|--diff|--chrome] FILE|DIR...: mode
 * HEAP_*. An exit status. */
int heap_files_main(int mode, char **args, int nargs, const struct hview *v);

/* -- Joined with a trace (join.c) ------------------------------------------ */

struct report;
/* Matches each object's blocks (lj_gc.c's: a table's header, separate
 * array and hash parts; a thread's lua_State and stack; else one) by
 * address and size with the blocks live at the end of trace rp (read to
 * its end), into h->join; after heap_dom. trace names it in the report
 * (kept, not copied). 0 or -ENOMEM. */
int heap_join(struct heap *h, struct report *rp, const char *trace);
/* The report's part: objects and bytes allocated while traced or before,
 * the top retainers' retained bytes split so, the sites and stacks. */
void heap_view_join(const struct heap *h, const struct hview *v, FILE *f);

/* -- Snapshot files (snapfile.c) ---------------------------------------------- */

/* Writes the copies hs[0..n) (those with a variant) to f: 0 or -errno. */
int heap_save(FILE *f, struct heap *hs, size_t n);
/* Reads a snapshot file (untrusted: bounded by the copy's caps): 0 with
 * *out (n copies; heap_free each, then free), or -1 with why. */
int heap_load(FILE *f, struct heap **out, size_t *n, char *why, size_t whylen);

/* -- Entry ------------------------------------------------------------------ */

/* --exe names given at most. */
#define HEAP_EXES_MAX 16
/* Processes --all snapshots in one run (one at a time): past it, counted
 * and said, not snapshotted. */
#define LMT_HEAP_PROCS_MAX 4096

struct hopts {
	struct hview view;
	const char *variant;
	int force, stopped, nofork, all;
	const char *exes[HEAP_EXES_MAX];
	unsigned nexes;
	const char *trace; /* --with TRACE, or NULL */
};

/* One process: its VMs found, copied (heap_capture), written to out if
 * given, reported on stdout after title if given. An exit status, having
 * said why on stderr if not LMT_OK. (snap.c) */
int heap_snap(pid_t pid, const struct hopts *o, const char *out, const char *title);
/* --all [--exe NAME]: every process running LuaJIT (session/select.c's
 * scan), one at a time, each to DIR/PID.lmh with -o DIR. LMT_OK, LMT_LOSSY
 * (a copy incomplete), or LMT_ERR if one failed (each said, counted). */
int heap_all(const struct hopts *o, const char *dir);

struct tr;
/* --heap-at-end (topts.at_end): as tracing ends, each traced process's
 * VMs copied (heap_capture, under the guardian, then continued) into a
 * snapshot beside its streams: -o FILE: FILE.lmh; -o DIR/: DIR/COMM.PID.lmh.
 * What fails is said; tracing ends anyway. (atend.c) */
void heap_at_end(struct tr *t);
/* Writes the copies to a new file path (streams/outfile.h; force: replace
 * one): 0 or an exit status, said. (snap.c) */
int heap_save_path(const char *path, int force, struct heap *hs, size_t n);
/* luamemtrace heap --with TRACE FILE: the snapshot FILE joined with the
 * trace o->trace, reported. An exit status. (snap.c) */
int heap_file_with(const char *path, const struct hopts *o);

/* luamemtrace heap ...: argv[0] is "heap". An exit status (exitcode.h). */
int heap_main(int argc, char **argv);

#endif
