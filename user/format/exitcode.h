/* Exit statuses of luamemtrace and `luamemtrace report`, one list. */
#ifndef LMT_EXITCODE_H
#define LMT_EXITCODE_H

enum {
	LMT_OK = 0,
	LMT_ERR = 1,    /* an error: said in one line on stderr */
	LMT_USAGE = 2,  /* a bad command line */
	LMT_LOSSY = 3,  /* output written, but incomplete: events lost, or a
			 * stream cut short (report) */
};

#endif
