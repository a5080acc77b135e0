#!/bin/bash
# test_ports.sh: `sluice ports`: bands per project, reuse, overrides, a
# corrupt registry refused untouched, concurrent allocation under flock.
#
# Needs no network and no root: the registry lives in a temporary directory
# ($SLUICE_PORTS_REGISTRY), removed at exit. Prints "ok - name" or
# "not ok - name" per check and exits 1 if any failed.
set -u


T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ports.XXXXXX")
trap 'rm -rf "$T"' EXIT
export SLUICE_PORTS_REGISTRY=$T/reg/ports
unset SLUICE_PORT_BASE
R=$SLUICE_PORTS_REGISTRY

source "$(dirname "$0")/clitest.sh"
base_of() { "$S" ports --project "$1" | awk '$1 == "base" { print $2 }'; }

# --- bands ---------------------------------------------------------------------

t "first project gets 41000" eval 'run 0 "$S" ports --project alpha && has "^base 41000$" "$T/out" &&
	has "^proxy 41000-41089$" "$T/out" && has "^tokens 41100-41189$" "$T/out" &&
	has "^band 41000-41199$" "$T/out"'
t "the registry is created with its header" eval 'head -1 "$R" | grep -qx "# sluice port bands v1"'
t "second project gets the next band" eval '[ "$(base_of beta)" = 41200 ]'
t "the same project gets the same band twice" eval '[ "$(base_of alpha)" = 41000 ] && [ "$(base_of alpha)" = 41000 ]'
t "show is the default command" eval 'run 0 "$S" ports show --project beta && has "^base 41200$" "$T/out"'
t "--json prints the band" eval 'run 0 "$S" ports --project beta --json &&
	has "\"base\":41200" "$T/out" && has "\"tokens\":\[41300,41389\]" "$T/out"'
t "the default project is the current directory" eval 'mkdir -p "$T/proj" && (cd "$T/proj" && "$S" ports >/dev/null) &&
	grep -qx "41400 $(cd "$T/proj" && pwd -P)" "$R"'
t "list shows every band" eval 'run 0 "$S" ports list && has "^41000 .*alpha$" "$T/out" &&
	has "^41200 .*beta$" "$T/out" && [ "$(grep -c "^4" "$T/out")" = 3 ]'
t "release frees the band" eval 'run 0 "$S" ports release --project alpha && ! grep -q " alpha$" "$R"'
t "a third project reuses the freed band" eval '[ "$(base_of gamma)" = 41000 ]'
t "releasing a project without a band is an error" run 1 "$S" ports release --project nobody
t "a bad project name is a usage error" run 2 "$S" ports --project " lead"
t "an unknown command is a usage error" run 2 "$S" ports frob

# --- overrides -----------------------------------------------------------------

cp "$R" "$T/before"
t "SLUICE_PORT_BASE wins" eval 'SLUICE_PORT_BASE=5000 run 0 "$S" ports --project delta &&
	has "^base 5000 (from SLUICE_PORT_BASE)$" "$T/out" && has "^band 5000-5199$" "$T/out"'
t "SLUICE_PORT_BASE leaves the registry untouched" eval 'cmp -s "$R" "$T/before" && ! grep -q delta "$R"'
t "a bad SLUICE_PORT_BASE is refused" eval 'SLUICE_PORT_BASE=65337 run 2 "$S" ports --project delta &&
	SLUICE_PORT_BASE=80 run 2 "$S" ports --project delta && cmp -s "$R" "$T/before"'

# --- a corrupt registry --------------------------------------------------------

printf '# sluice port bands v1\n41000 a\n41300 b\n' >"$R"
cp "$R" "$T/corrupt"
t "a corrupt registry is refused with file:line" eval 'run 1 "$S" ports --project new &&
	has "^ports: $R:3: base not on a band boundary" "$T/err"'
t "the corrupt registry is left byte for byte" cmp -s "$R" "$T/corrupt"
t "release and list refuse it too" eval 'run 1 "$S" ports release --project a && run 1 "$S" ports list &&
	cmp -s "$R" "$T/corrupt"'
printf '41000 a\n' >"$R"
t "a registry without its header is refused" eval 'run 1 "$S" ports --project new && has ":1: not a port band registry" "$T/err" &&
	[ "$(cat "$R")" = "41000 a" ]'
: >"$R"
t "an empty registry file is refused, not taken as empty" eval 'run 1 "$S" ports --project new && [ ! -s "$R" ]'

# --- concurrency ---------------------------------------------------------------

rm -f "$R"
pids=()
for i in $(seq 1 20); do
	timeout 30 "$S" ports --project "p$i" >"$T/c$i" 2>&1 &
	pids+=($!)
done
st=0
for p in "${pids[@]}"; do wait "$p" || st=1; done
t "20 concurrent allocations all succeed" [ "$st" = 0 ]
t "20 concurrent allocations get 20 distinct bands" eval '[ "$(cat "$T"/c* | awk "\$1 == \"base\" { print \$2 }" | sort -u | wc -l)" = 20 ]'
t "the registry holds the 20 lowest bands" eval '[ "$(grep -c "^4" "$R")" = 20 ] &&
	[ "$(awk "NR > 1 { print \$1 }" "$R" | sort -n | tail -1)" = $((41000 + 19 * 200)) ]'
t "each process saw what the registry says" eval 'for i in $(seq 1 20); do
	b=$(awk "\$1 == \"base\" { print \$2 }" "$T/c$i"); grep -qx "$b p$i" "$R" || exit 1; done'

lab_done
