#!/usr/bin/env bats
# The documentation's relative links: every one in README.md and docs/*.md
# names a file that exists and, for a link into Markdown, a heading in it.

ROOT="$BATS_TEST_DIRNAME/.."

# slugs FILE: the anchors of FILE's headings as GitHub makes them (lower
# case, punctuation dropped, spaces to '-', a repeat given -1, -2, ...);
# headings inside ``` fences are not headings.
slugs() {
	awk '
		/^```/ { fence = !fence; next }
		fence || !/^#+ / { next }
		{
			s = tolower($0)
			sub(/^#+ /, "", s)
			gsub(/[^a-z0-9 _-]/, "", s)
			gsub(/ /, "-", s)
			n = seen[s]++
			print (n ? s "-" n : s)
		}' "$1"
}

# broken_links FILE...: "FILE: TARGET" for each relative link whose file,
# or whose anchor in a Markdown file, does not exist. Links inside ```
# fences and `code spans` are not links; http(s) and mailto are not
# checked.
broken_links() {
	local f link path anchor dest
	for f in "$@"; do
		awk '
			/^```/ { fence = !fence; next }
			fence { next }
			{
				line = $0
				gsub(/`[^`]*`/, "", line)
				while (match(line, /\]\([^) ]+\)/)) {
					print substr(line, RSTART + 2, RLENGTH - 3)
					line = substr(line, RSTART + RLENGTH)
				}
			}' "$f" |
		while IFS= read -r link; do
			case "$link" in http://*|https://*|mailto:*) continue ;; esac
			path=${link%%#*}
			anchor=
			[ "$path" != "$link" ] && anchor=${link#*#}
			if [ -z "$path" ]; then
				dest=$f
			else
				dest="$(dirname "$f")/$path"
			fi
			if [ ! -e "$dest" ]; then
				echo "$f: $link"
			elif [ -n "$anchor" ] && [[ "$dest" == *.md ]] &&
			     ! slugs "$dest" | grep -qxF -- "$anchor"; then
				echo "$f: $link"
			fi
		done
	done
}

@test "the link check finds a missing file, a missing anchor and nothing else" {
	local d="$BATS_TEST_TMPDIR"
	mkdir -p "$d/docs"
	printf '# Top\n\n## Sampling: `--duty`\n\n## Twice\n\n## Twice\n' > "$d/docs/a.md"
	cat > "$d/README.md" <<-'EOF'
	# Front

	[ok](docs/a.md) [ok](docs/a.md#sampling---duty) [ok](docs/a.md#twice-1)
	[ok](#front) [ok](https://example.org/x) `[code](nowhere.md)`
	[gone](docs/b.md) [bad anchor](docs/a.md#nowhere) [bad](#back)
	```
	[fenced](nowhere.md)
	```
	EOF
	run broken_links "$d/README.md" "$d/docs/a.md"
	[ "$status" -eq 0 ]
	[ "$output" = "$d/README.md: docs/b.md
$d/README.md: docs/a.md#nowhere
$d/README.md: #back" ]
}

@test "every relative link in README.md and docs/*.md resolves, anchors included" {
	cd "$ROOT"
	run broken_links README.md docs/*.md
	[ "$status" -eq 0 ]
	[ "$output" = "" ]
}
