/* What report --flamegraph inlines in its page (user/report/flame.c):
 * d3 and d3-flame-graph from the npm registry (user/report/flame/
 * package-lock.json pins them; make fetches them into build/npm), and the
 * page's own markup and code. Found through the assembler's -I paths. */
#define ASSET(sym, file)       \
	.global sym;           \
	.balign 8;             \
sym:                           \
	.incbin file;          \
	.global sym##_end;     \
sym##_end:

	.section .rodata
ASSET(lmt_fg_css, "d3-flame-graph/dist/d3-flamegraph.css")
ASSET(lmt_fg_d3, "d3/dist/d3.min.js")
ASSET(lmt_fg_flame, "d3-flame-graph/dist/d3-flamegraph.min.js")
ASSET(lmt_fg_tip, "d3-flame-graph/dist/d3-flamegraph-tooltip.min.js")
ASSET(lmt_fg_page, "page.html")
ASSET(lmt_fg_js, "page.js")

	.section .note.GNU-stack, "", @progbits
