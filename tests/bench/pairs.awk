# pairs.awk: the floor against tracing in one tracer's --ab=MS windows.
#
# Files: first the switches ("traced T" or "floor T", or with
# --ab-without "without-PARTS T": a window of that side began at wall
# time T), then one file per source of a count: "T N"
# lines, N the source's count up to wall time T, both rising (an nginx's
# access log's requests, a sysbench thread's events). A window's rate is
# the sources' counts between its start (plus -v guard seconds, where the
# other side's backlog may still run) and the next switch, interpolated,
# over that time; a window not covered by every source is left out.
#
# Prints "win SIDE RATE" for each window, then "pair R" for each two
# adjacent windows of both sides: the floor's rate over tracing's, the
# host's drift over seconds cancelled within the pair.
BEGIN { nw = 0; ns = 0 }
FNR == NR { side[nw] = $1; at[nw++] = $2; next }
FNR == 1 { ns++ }
{ n[ns]++; t[ns, n[ns]] = $1; c[ns, n[ns]] = $2 }

# Source s's count at time x (linear between samples); -1 if outside.
function count(s, x,   lo, hi, mid) {
	if (!n[s] || x < t[s, 1] || x > t[s, n[s]])
		return -1
	lo = 1
	hi = n[s]
	while (hi - lo > 1) {
		mid = int((lo + hi) / 2)
		if (t[s, mid] <= x)
			lo = mid
		else
			hi = mid
	}
	if (t[s, hi] == t[s, lo])
		return c[s, lo]
	return c[s, lo] + (c[s, hi] - c[s, lo]) * (x - t[s, lo]) / (t[s, hi] - t[s, lo])
}

END {
	k = 0
	for (i = 0; i + 1 < nw; i++) {
		a = at[i] + guard
		b = at[i + 1]
		if (b <= a)
			continue
		sum = 0
		ok = 1
		for (s = 1; s <= ns; s++) {
			x = count(s, a)
			y = count(s, b)
			if (x < 0 || y < 0)
				ok = 0
			sum += y - x
		}
		if (!ok)
			continue
		wside[k] = side[i]
		wrate[k] = sum / (b - a)
		wix[k++] = i
		print "win", side[i], sum / (b - a)
	}
	for (j = 0; j + 1 < k; j++) {
		# only neighbours pair: no window left out between them
		if (wix[j + 1] != wix[j] + 1 || wside[j] == wside[j + 1] || wrate[j] <= 0 || wrate[j + 1] <= 0)
			continue
		if (wside[j] != "traced") # the floor, or --ab-without's windows
			print "pair", wrate[j] / wrate[j + 1]
		else
			print "pair", wrate[j + 1] / wrate[j]
	}
}
