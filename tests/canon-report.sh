#!/usr/bin/env bash
# Canonicalises a memprof report (luajit-parse-memprof or luamemtrace) so
# two reports can be compared with diff although the reference parser
# prints entries with equal sort keys in random order: within each run of
# equal event counts (ALLOCATIONS/REALLOCATIONS/DEALLOCATIONS, an entry is
# its line plus its Overrides block) and each run of equal byte figures
# (HEAP SUMMARY), entries are sorted bytewise. Everything else is kept.
#
#   tests/canon-report.sh [FILE]    (stdin if no FILE)
set -euo pipefail
LC_ALL=C awk '
function flush() { prevkey = ""; }
function emit(k, text) { printf "%09d\t%s\n", k, text; }
BEGIN { seq = 0; sect = ""; cur = ""; curkey = 0; in_ov = 0; prevkey = "" }
function end_entry() { if (cur != "") { emit(curkey, cur); cur = ""; } }
{
	line = $0
	if (sect == "events") {
		if (in_ov) {
			cur = cur "\001" line
			if (line == "") in_ov = 0
			next
		}
		if (line == "\tOverrides:") { cur = cur "\001" line; in_ov = 1; next }
		if (match(line, /: -?[0-9]+ events\t\+[^\t]*\t-[^\t]*$/)) {
			end_entry()
			k = substr(line, RSTART)
			sub(/ events.*/, "", k); sub(/^: /, "", k)
			if (k != prevkey) { seq++; prevkey = k }
			cur = line; curkey = seq
			next
		}
		end_entry(); flush()
	}
	if (sect == "heap") {
		if (match(line, / holds [^ ]+: -?[0-9]+ allocs, -?[0-9]+ frees$/)) {
			k = substr(line, RSTART)
			sub(/: .*/, "", k)
			if (k != prevkey) { seq++; prevkey = k }
			emit(seq, line)
			next
		}
		flush()
	}
	if (line == "ALLOCATIONS" || line == "REALLOCATIONS" || line == "DEALLOCATIONS") sect = "events"
	else if (line == "HEAP SUMMARY:") sect = "heap"
	else if (sect != "" && line != "") sect = ""
	seq++; flush()
	emit(seq, line)
}
END { end_entry() }
' "${1:-/dev/stdin}" | LC_ALL=C sort | cut -f2- | tr '\001' '\n'
