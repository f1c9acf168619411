/* Caps on what the tracer reads from a target (issue 41: the target is an
 * adversary). Every count, length and index read from a traced process's
 * memory is checked against one of these before use; what is over a cap
 * is skipped and counted (struct tproc's counters, said in the summary and
 * the sidecar). Each value is above what a real LuaJIT ever makes, and
 * says why (LuaJIT's own limits: lj_def.h, lj_jit.h's JIT_PARAMDEF).
 */
#ifndef LMT_READCAPS_H
#define LMT_READCAPS_H

/* -- Traces (convert/jit.c) ------------------------------------------------------ */

/* Snapshots of one trace. GCtrace.nsnap is 16 bits; lj_snap_add stops a
 * trace at JIT_P_maxsnap snapshots, 500 by default: four times that. */
#define LMT_TRACE_SNAPS_MAX 2048
/* Snapshot map entries of one trace: each snapshot has at most
 * LJ_MAX_JSLOTS (250) slots, and under FR2 two words of PC. */
#define LMT_TRACE_SNAPMAP_MAX (LMT_TRACE_SNAPS_MAX * (250 + 2))
/* IR instructions and constants of one trace, [nk, nins): IR references
 * are 16 bits (IRRef1), constants below REF_BIAS, instructions above. */
#define LMT_TRACE_IR_MAX 65536
/* A trace number: TraceNo1 is 16 bits (JIT_P_maxtrace, 1000 by default,
 * is at most 65535). */
#define LMT_TRACENO_MAX 65535
/* Bytecode instructions of a prototype a trace runs, read whole. LuaJIT
 * allows LJ_MAX_BCINS (2^26); a function of a million instructions is
 * already generated code no trace runs through. */
#define LMT_PROTO_BC_MAX (1u << 20)
/* Bytecodes one stretch of a trace is walked over (convert/jit.c's walk). */
#define LMT_WALK_STEPS 256
/* Branches of one stretch whose way is told by trying both (each try at
 * most LMT_WALK_STEPS): a stretch between two snapshots has few. */
#define LMT_WALK_BRANCHES 8
/* Memory kept for one trace: its snapshots (~400 bytes each), IR (8 bytes
 * an instruction), and the bytecode and line tables of the prototypes it
 * runs. A trace at the caps above with ten 4k-instruction prototypes
 * keeps ~1.5 MiB. */
#define LMT_TRACE_BYTES_MAX (8u << 20)
/* Memory kept for all the traces of one process: its oldest go first when
 * a new one would pass it (1000 traces a VM by default, a few hundred
 * KiB the largest). */
#define LMT_PROC_TRACE_BYTES_MAX (128u << 20)
/* Machine code of one trace read for its calls (convert/jit_read.c's
 * jit_read_calls): LuaJIT's own mcode area is 64 KiB by default
 * (JIT_P_sizemcode 32 KiB on x64, maxmcode 512 KiB in all), and a trace
 * is a few KiB; past it, the trace's calls are not told. */
#define LMT_TRACE_MCODE_MAX (64u << 10)
/* Call targets one VM's compiled code was seen making new blocks below
 * (convert/jit.c): a handful of LuaJIT's allocating functions. */
#define LMT_ALLOC_CALLEES_MAX 256
/* Reads of the target made for one trace, all while BPF holds the process
 * stopped (a real trace takes a few per snapshot). */
#define LMT_TRACE_READS_MAX 32768
/* Reads of the target made to resolve all the traces of one process, its
 * life long: the consumer thread is every traced process's, and one that
 * names trace after forged trace would keep it (65535 numbers at
 * LMT_TRACE_READS_MAX each). A real trace takes a few hundred: this is
 * ~10000 real traces, or 128 at the per-trace cap (seconds of reads).
 * Over it, the process's traces are no longer resolved: their events stay
 * at trace granularity, counted (tproc's tr_budget). */
#define LMT_PROC_READS_MAX (1u << 22)

/* -- Names (convert/luanames.c, convert/cnames.c) ------------------------- */

/* Hash nodes of one table of package.loaded or a module (2^16: a module
 * of 65536 keys). */
#define LMT_NAMES_TAB_NODES_MAX (1u << 16)
/* Hash nodes read in one walk of package.loaded, all tables together; no
 * table is walked twice. A large host (nginx with lua-resty modules) has
 * a few thousand. */
#define LMT_NAMES_NODES_MAX (1u << 17)
/* A key's length in a Lua name (module.key). */
#define LMT_NAMES_KEY_MAX 200
/* C functions remembered as not named by package.loaded: one seen again
 * waits for the next scheduled walk instead of walking now. */
#define LMT_NAMES_MISSED_MAX 4096
/* Seconds between walks for functions that were not named: a module
 * loaded since may name them. */
#define LMT_NAMES_REWALK_S 1.0

/* A function name's identifier in a stack frame (convert/fnames.c):
 * "method 'NAME'" fits a frame's name (streams/stknum.h, 64 bytes); a
 * longer one is cut, ending in "...", and counted (fn_cut). */
#define LMT_FNAME_ID_MAX 48
/* Bytes of a prototype's upvalue and local names read to name a call
 * (GCproto.uvinfo, varinfo): ~10000 locals of one function. */
#define LMT_FNAME_INFO_MAX (1u << 18)
/* Instructions walked back from a call to the one that loaded the called
 * slot (lj_debug_slotname walks to the function's start): a real call
 * finds it, or an instruction that ends the walk, within a statement or
 * two; past it, no name (counted with fn_unread). 64 reads at most. */
#define LMT_FNAME_WALK_MAX 4096
/* Call sites whose name a VM keeps (convert/fnames.c); past it a name is
 * computed again each time it is needed. */
#define LMT_FNAMES_MAX (1u << 20)

/* -- Prototypes (convert/events.c, convert/jit.c) ------------------------ */

/* A chunk name's bytes written to a stream: load(string) without a name
 * has the whole source as its name. A longer one is cut to this many
 * bytes, its last three "..." (LuaJIT's own lj_debug_shortname cuts to
 * LUA_IDSIZE, 60, the same way). */
#define LMT_CHUNKNAME_MAX 4096

/* -- VMs (target/vmscan.c) ------------------------------------------------------------- */

/* VMs of one process: a host runs one a worker thread (nginx: one a
 * worker process). */
#define LMT_VMS_MAX 256

/* -- Processes (target/proc.c) ---------------------------------------------- */

/* Threads of one process looked at for their state (proc_stopped): a
 * process of more threads is taken as stopped when those are. */
#define LMT_PROC_THREADS_MAX 65536

#endif
