// node check.mjs TOOLKIT FILE PATH...: reads FILE (heap --chrome's output)
// with Chrome DevTools' heap snapshot model (TOOLKIT: heap-snapshot-toolkit's
// index.js) and prints, one line each: the total DevTools counts; for
// each PATH (edge names from the root, '/'-separated) the node reached:
// its name, self size, DevTools' own retained size and edge count; then
// DevTools' Summary rows (class, count, self size) of every class.
const [toolkit, file, ...paths] = process.argv.slice(2);
const { parse } = await import(toolkit);
const { createReadStream } = await import('node:fs');
const s = await parse(createReadStream(file, 'utf-8'));
console.log('total ' + s.getStatistics().total);
const child = (n, name) => {
	for (const it = n.edges(); it.hasNext(); it.next())
		if (String(it.item().name()) === name)
			return it.item().node();
	throw new Error('no edge ' + name + ' from ' + n.name());
};
for (const p of paths) {
	let n = s.rootNode();
	for (const step of p.split('/'))
		n = child(n, step);
	console.log('node ' + p + ' ' + JSON.stringify(n.name()) + ' ' + n.selfSize() + ' ' +
		n.retainedSize() + ' ' + n.edgesCount());
}
for (const v of Object.values(s.aggregatesWithFilter({})))
	console.log('class ' + JSON.stringify(v.name) + ' ' + v.count + ' ' + v.self);
