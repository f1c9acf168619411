// luamemtrace report --flamegraph: the page's own code (user/report/flame.c
// inlines it after d3 and d3-flame-graph, and the data as JSON in
// #lmt-data). Data: keys[k] a folded stack (root first, ';'); v[k] =
// [bytes allocated, allocations, bytes held at the end, blocks held at the
// end, bytes held at the peak, blocks held at the peak]; t = [k, bucket
// allocated, bucket freed (nb: never), bytes, blocks]; series.max/end: held
// bytes per bucket of events (largest, last); n events, peak {seq, bytes}.
// Several streams (streams > 1): a root frame each, bucket b of each the
// same fraction of its events, the series and peaks summed (each its own).
(function () {
	'use strict';
	const D = JSON.parse(document.getElementById('lmt-data').textContent);
	const WEIGHTS = {
		bytes: { v: 0, other: 1, what: 'allocated', unit: 'bytes' },
		allocs: { v: 1, other: 0, what: 'allocations', unit: 'count' },
		live: { v: 2, other: 3, what: 'held at the end', unit: 'bytes' },
		peak: { v: 4, other: 5, what: 'held at the peak', unit: 'bytes' },
	};

	function fmtBytes(b) {
		const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0;
		while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
		return (i ? b.toFixed(2) : String(b)) + u[i];
	}

	// The tree of a weight: vals is [[key, bytes, count], ...], value the
	// bytes (or the count), both kept for the tooltip.
	function tree(vals, byCount) {
		const root = { name: 'all', value: 0, bytes: 0, count: 0, children: [], idx: new Map() };
		for (const [k, b, c] of vals) {
			const v = byCount ? c : b;
			if (!v)
				continue;
			let node = root;
			node.value += v; node.bytes += b; node.count += c;
			for (const f of D.keys[k].split(';')) {
				let ch = node.idx.get(f);
				if (!ch) {
					ch = { name: f, value: 0, bytes: 0, count: 0, children: [], idx: new Map() };
					node.idx.set(f, ch);
					node.children.push(ch);
				}
				ch.value += v; ch.bytes += b; ch.count += c;
				node = ch;
			}
		}
		(function strip(n) { delete n.idx; n.children.forEach(strip); })(root);
		return root;
	}

	function weightVals(w) {
		const W = WEIGHTS[w], out = [];
		D.v.forEach((v, k) => {
			const b = W.unit === 'bytes' ? v[W.v] : v[W.other];
			const c = W.unit === 'bytes' ? v[W.other] : v[W.v];
			out.push([k, b, c]);
		});
		return out;
	}

	// Allocated in buckets [a, b] and still live at the end of b.
	function rangeVals(a, b) {
		const acc = new Map();
		for (const [k, born, dead, bytes, n] of D.t) {
			if (born < a || born > b || dead <= b)
				continue;
			const x = acc.get(k) || [k, 0, 0];
			x[1] += bytes; x[2] += n;
			acc.set(k, x);
		}
		return [...acc.values()];
	}

	const chartEl = document.getElementById('chart');
	const details = document.getElementById('details');
	const weightSel = document.getElementById('weight');
	const rangeEl = document.getElementById('range');
	let inverted = true, range = null; /* icicle first, as memray */

	// Names are the target's to choose: they reach the page as text only
	// (textContent, text nodes, attributes), never as HTML. d3-flame-graph's
	// own handlers that put names in the page are replaced by these.
	const name = d => String(d.data.name);
	let searchText = ''; /* what a search found, shown when no frame is hovered */
	const what = d => fmtBytes(d.data.bytes) + ' in ' + d.data.count +
		(D.heap ? ' objects' : weightSel.value === 'allocs' ? ' allocations' : ' blocks');
	// The tooltip (d3-flame-graph calls tip(svg) at each draw, then
	// tip.show(d, element) and tip.hide()): one div, its text two lines.
	function textTip() {
		let el = null;
		function tip() {
			if (el)
				return;
			el = document.createElement('div');
			el.className = 'd3-flame-graph-tip';
			el.style.cssText = 'display:none;position:absolute;pointer-events:none;white-space:pre-line';
			document.body.appendChild(el);
		}
		tip.show = (d, node) => {
			const r = node.getBoundingClientRect();
			tip();
			el.textContent = name(d) + '\n' + what(d);
			el.style.left = (r.left + window.scrollX + 5) + 'px';
			el.style.top = (r.bottom + window.scrollY + 5) + 'px';
			el.style.display = 'block';
			return tip;
		};
		tip.hide = () => {
			if (el)
				el.style.display = 'none';
			return tip;
		};
		return tip;
	}
	const chart = flamegraph()
		.width(Math.max(600, chartEl.clientWidth || window.innerWidth - 40))
		.cellHeight(18)
		.minFrameSize(1)
		.transitionDuration(300)
		.sort(true)
		.tooltip(textTip())
		.getName(name)
		.setDetailsElement(details)
		.setSearchHandler((res, sum, total) => {
			searchText = 'search: ' + (weightSel.value === 'allocs' ? sum : fmtBytes(sum)) +
				' of ' + (weightSel.value === 'allocs' ? total : fmtBytes(total)) +
				' (' + (total ? 100 * sum / total : 0).toFixed(3) + '%)';
			details.textContent = searchText;
		})
		.setDetailsHandler(t => { details.textContent = t || searchText; })
		.setLabelHandler(d => name(d) + ': ' + what(d));

	function draw() {
		const w = weightSel.value;
		let data;
		if (range) {
			data = tree(rangeVals(range[0], range[1]), false);
			rangeEl.textContent = 'allocated in ' + (D.streams > 1 ?
				Math.round(range[0] * 100 / D.nb) + '-' + Math.round((range[1] + 1) * 100 / D.nb) +
				'% of each stream\'s events' : 'events ' + range[2] + '-' + range[3]) +
				' and still held at its end: ' + fmtBytes(data.bytes) + ' in ' + data.count +
				' blocks (clear the selection to go back)';
		} else {
			data = tree(weightVals(w), WEIGHTS[w].unit === 'count');
			rangeEl.textContent = '';
		}
		chartEl.textContent = '';
		d3.select(chartEl).datum(data).call(chart.inverted(inverted));
		document.body.dataset.weight = range ? 'range' : w;
		document.body.dataset.total = String(data.value);
	}

	// The held bytes over the stream's events, a brush to pick a range.
	function timeline() {
		const el = document.getElementById('timeline');
		const width = Math.max(600, el.clientWidth || window.innerWidth - 40), height = 110;
		const m = { l: 64, r: 12, t: 8, b: 22 };
		const nb = D.series.max.length;
		if (!nb)
			return;
		const x = d3.scaleLinear().domain([0, nb]).range([m.l, width - m.r]);
		const y = d3.scaleLinear().domain([0, d3.max(D.series.max) || 1]).nice()
			.range([height - m.b, m.t]);
		const svg = d3.select(el).append('svg').attr('width', width).attr('height', height);
		const pts = D.series.max.map((v, i) => [i, v]).concat([[nb, D.series.end[nb - 1]]]);
		svg.append('path').attr('class', 'area')
			.attr('d', d3.area().curve(d3.curveStepAfter).x(p => x(p[0])).y0(y(0)).y1(p => y(p[1]))(pts));
		const multi = D.streams > 1;
		svg.append('g').attr('transform', 'translate(0,' + (height - m.b) + ')')
			.call(d3.axisBottom(d3.scaleLinear().domain([0, multi ? 100 : D.n])
				.range([m.l, width - m.r])).ticks(8)
				.tickFormat(multi ? (v => v + '%') : d3.format('~s')));
		svg.append('g').attr('transform', 'translate(' + m.l + ',0)')
			.call(d3.axisLeft(y).ticks(4).tickFormat(fmtBytes));
		const pb = D.n ? D.peak.seq * nb / D.n : 0;
		if (!multi) svg.append('line').attr('class', 'peak').attr('x1', x(pb)).attr('x2', x(pb))
			.attr('y1', m.t).attr('y2', height - m.b);
		if (!multi) svg.append('text').attr('class', 'peak-label')
			.attr('x', x(pb) + (x(pb) > width / 2 ? -4 : 4)).attr('y', m.t + 10)
			.attr('text-anchor', x(pb) > width / 2 ? 'end' : 'start')
			.text('peak ' + fmtBytes(D.peak.bytes));
		svg.append('g').call(d3.brushX().extent([[m.l, m.t], [width - m.r, height - m.b]])
			.on('end', ev => {
				if (!ev.selection) {
					range = null;
				} else {
					const a = Math.max(0, Math.floor(x.invert(ev.selection[0])));
					const b = Math.min(nb - 1, Math.ceil(x.invert(ev.selection[1])) - 1);
					range = [a, b, Math.floor(a * D.n / nb), Math.floor((b + 1) * D.n / nb) - 1];
				}
				draw();
			}));
	}

	// A heap's page (luamemtrace heap --flamegraph): keys are retention
	// paths, v = [retained bytes, objects] (repeated); D.heap its summary.
	if (D.heap) {
		weightSel.options[0].textContent = 'retained bytes';
		weightSel.options[1].textContent = 'objects';
		weightSel.querySelectorAll('option[value=live], option[value=peak]').forEach(o => o.remove());
	}
	document.getElementById('title').textContent = D.title;
	document.getElementById('summary').textContent = D.heap ? D.heap : D.streams > 1 ?
		D.streams + ' streams, ' + D.n + ' events; ' + fmtBytes(D.totals[0]) + ' allocated in ' +
		D.totals[1] + ' allocations; held at the end: ' + fmtBytes(D.totals[2]) +
		'; at each stream\'s own peak: ' + fmtBytes(D.peak.bytes) +
		'. The x axis is the share of each stream\'s events (streams have no timestamps).' :
		D.n + ' events; ' +
		fmtBytes(D.totals[0]) + ' allocated in ' + D.totals[1] + ' allocations; held at the end: ' +
		fmtBytes(D.totals[2]) + '; peak: ' + fmtBytes(D.peak.bytes) + ' after event ' + D.peak.seq +
		'. Events are the x axis: the stream has no timestamps.';
	weightSel.addEventListener('change', () => { range = null; draw(); });
	document.getElementById('toggle').addEventListener('click', ev => {
		inverted = !inverted;
		ev.target.textContent = inverted ? 'Flame' : 'Icicle';
		draw();
	});
	document.getElementById('reset').addEventListener('click', () => chart.resetZoom());
	document.getElementById('search-form').addEventListener('submit', ev => {
		ev.preventDefault();
		chart.search(document.getElementById('search').value);
	});
	document.getElementById('clear').addEventListener('click', () => {
		document.getElementById('search').value = '';
		searchText = '';
		chart.clear();
	});
	// ?weight=bytes|allocs|live|peak, ?range=A-B (buckets): a view to share
	const q = new URLSearchParams(location.search), w0 = q.get('weight'), r0 = q.get('range');
	if (w0 && WEIGHTS[w0] && [...weightSel.options].some(o => o.value === w0))
		weightSel.value = w0;
	if (r0 && /^\d+-\d+$/.test(r0)) {
		const nb = D.series.max.length, [a, b] = r0.split('-').map(Number);
		if (a <= b && b < nb)
			range = [a, b, Math.floor(a * D.n / nb), Math.floor((b + 1) * D.n / nb) - 1];
	}
	timeline();
	draw();
})();
