/* tests/hostile_files.bats: a shared object that says it is LuaJIT (it
 * exports lua_newstate and luaJIT_setmode, which is how --all tells), and,
 * built with -DVIC, its twin exporting none of that: names of the same
 * lengths, so the code sits at the same offsets in both (a stand-in for
 * libc, mapped over the first's range by a hostile process). */
#ifdef VIC
#define NAME(a, b) vic##b
#else
#define NAME(a, b) a##b
#endif

void *NAME(lua, _newstate)(void *f, void *ud);
int NAME(luaJIT, _setmode)(void *L, int idx, int mode);
void NAME(lua, _close)(void *L);

static volatile int calls;

void *NAME(lua, _newstate)(void *f, void *ud)
{
	calls += ud != 0;
	return (void *)&calls; /* not NULL: a new VM, for BPF */
}

int NAME(luaJIT, _setmode)(void *L, int idx, int mode)
{
	calls += idx + mode;
	return L != 0;
}

void NAME(lua, _close)(void *L)
{
	calls -= L != 0;
}
