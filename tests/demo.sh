#!/usr/bin/env bash
# Traces the bundled demo workload and shows what luamemtrace found.
set -e
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo.bin}
echo "== luamemtrace -f -o $out -- luajit tests/lua/demo.lua"
./luamemtrace -f -o "$out" -- luajit tests/lua/demo.lua
echo
echo "== luamemtrace report --leak-only --human-readable $out"
./luamemtrace report --leak-only --human-readable "$out" | head -12
echo
echo "== luamemtrace report --folded $out   (flamegraph.pl input; heaviest 5)"
./luamemtrace report --folded "$out" | awk '{print $NF "\t" $0}' | sort -nr | cut -f2- | head -5
