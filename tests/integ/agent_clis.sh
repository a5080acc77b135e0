#!/bin/bash
# tests/integ/agent_clis.sh: the real agent CLIs the tests run, at pinned
# versions, installed from npm into a cache of the tests' own (never into the
# checkout or `make run`'s dependencies: together they are hundreds of MB).
#
#   tests/integ/agent_clis.sh            install what is missing; print NAME PATH lines
#   source tests/integ/agent_clis.sh     then: agent_clis_ensure || skip
#                                        sets AGENT_CLI_CLAUDE, _CODEX, _GEMINI
#
# Cache: ${SLUICE_TEST_CACHE:-/var/cache/sluice-tests}/npm/NAME@VERSION, one npm
# prefix per package, made under a temporary name and renamed when whole, so a
# killed install leaves nothing that looks installed. Present ones are reused
# without asking the registry. When the registry cannot be reached (or the
# install does not finish within AGENT_CLIS_TIMEOUT seconds, 240 by default) it
# prints "# skip - ..." and returns non-zero: a test skips, never fails, on it.

AGENT_CLIS=(
	"claude @anthropic-ai/claude-code 2.1.337 bin/claude"
	"codex @openai/codex 0.171.0 bin/codex"
	"gemini @google/gemini-cli 0.61.0 bin/gemini"
)

agent_clis_dir() { echo "${SLUICE_TEST_CACHE:-/var/cache/sluice-tests}/npm"; }

# agent_clis_ensure: every pinned CLI present (installing what is missing).
agent_clis_ensure() {
	local cache line name pkg ver bin dir tmp missing=() budget=${AGENT_CLIS_TIMEOUT:-240}
	cache=$(agent_clis_dir)
	for line in "${AGENT_CLIS[@]}"; do
		read -r name pkg ver bin <<<"$line"
		dir=$cache/$name@$ver
		[ -x "$dir/node_modules/.bin/${bin#bin/}" ] && [ -f "$dir/.complete" ] || missing+=("$line")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		if ! command -v npm >/dev/null 2>&1; then
			echo "# skip - npm is not installed: the agent CLIs cannot be installed"
			return 1
		fi
		mkdir -p "$cache" || { echo "# skip - cannot make $cache"; return 1; }
		# one installer at a time per cache; the others wait (bounded) and reuse
		exec {lockfd}>"$cache/.lock"
		if ! flock -w "$budget" "$lockfd"; then
			echo "# skip - another install of the agent CLIs holds $cache/.lock"
			exec {lockfd}>&-
			return 1
		fi
		if ! timeout 30 npm view "@anthropic-ai/claude-code@2.1.337" version >/dev/null 2>&1; then
			echo "# skip - the npm registry cannot be reached: the agent CLIs are not installed"
			exec {lockfd}>&-
			return 1
		fi
		local t_end=$((SECONDS + budget))
		for line in "${missing[@]}"; do
			read -r name pkg ver bin <<<"$line"
			dir=$cache/$name@$ver
			[ -f "$dir/.complete" ] && continue # another installer made it meanwhile
			local left=$((t_end - SECONDS))
			tmp=$cache/.tmp-$name-$$
			rm -rf "$tmp" "$dir"
			mkdir -p "$tmp"
			if [ "$left" -le 0 ] || ! timeout -k 5 "$left" npm install --prefix "$tmp" --no-audit --no-fund \
				--no-save --loglevel=error "$pkg@$ver" >"$cache/.install-$name.log" 2>&1; then
				echo "# skip - npm install $pkg@$ver failed or took over ${budget}s: $(tail -n 3 "$cache/.install-$name.log" | tr '\n' ' ' | cut -c1-300)"
				rm -rf "$tmp"
				exec {lockfd}>&-
				return 1
			fi
			touch "$tmp/.complete"
			mv "$tmp" "$dir"
		done
		exec {lockfd}>&-
	fi
	AGENT_CLI_CLAUDE=$cache/claude@2.1.337/node_modules/.bin/claude
	AGENT_CLI_CODEX=$cache/codex@0.171.0/node_modules/.bin/codex
	AGENT_CLI_GEMINI=$cache/gemini@0.61.0/node_modules/.bin/gemini
	export AGENT_CLI_CLAUDE AGENT_CLI_CODEX AGENT_CLI_GEMINI
	return 0
}

if [ "${BASH_SOURCE[0]}" == "$0" ]; then
	agent_clis_ensure || exit 1
	echo "claude $AGENT_CLI_CLAUDE"
	echo "codex $AGENT_CLI_CODEX"
	echo "gemini $AGENT_CLI_GEMINI"
fi
