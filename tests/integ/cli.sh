#!/bin/bash
# cli.sh: the built sluice CLI end to end: check, allow, log.
#
# Needs no proxy, no network and no root: everything happens in a temporary
# directory that is removed at exit. SLUICE_BUILD names the build directory
# (default build); the binary is $SLUICE_BUILD/sluice. Prints "ok - name" or
# "not ok - name" per check and exits 1 if any failed.
set -u


T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cli.XXXXXX")
follow_pid=
cleanup() {
	[ -n "$follow_pid" ] && kill "$follow_pid" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

source "$(dirname "$0")/clitest.sh"

cd "$T" || exit 1
cat >sluice.conf <<EOF
state $T/state
allow config.example
EOF
C="$S -c $T/sluice.conf"
store=$T/state/grants

# --- usage and check ---------------------------------------------------------

t "no verb is a usage error" run 2 "$S"
t "unknown verb is a usage error" run 2 "$S" frobnicate
t "-h prints usage" eval 'run 0 "$S" -h && has "exit status" "$T/out" && has "allow add GRANT" "$T/out"'
t "the example config passes check" run 0 "$S" check "$here/etc/sluice.conf"
t "check -q prints nothing" eval 'run 0 "$S" check -q "$here/etc/sluice.conf" && [ ! -s "$T/out" ]'

printf 'listen 1.2.3.4\nmode x\nfrob 1\nhead-timeout 0\nallow *.com\nmode observe\n' >bad.conf
t "check reports every error with file:line" eval 'run 1 "$S" check bad.conf &&
	has "^bad.conf:2: mode: unknown mode \"x\"" "$T/err" &&
	has "^bad.conf:3: unknown directive \"frob\"" "$T/err" &&
	has "^bad.conf:4: head-timeout: 0 out of range 1..86400" "$T/err" &&
	has "^bad.conf:5: allow: bad grant \"\*.com\"" "$T/err" &&
	has "^bad.conf:6: mode: given twice (first on line 2)" "$T/err" &&
	has "^bad.conf:1: listen: bad address \"1.2.3.4\"" "$T/err" && [ ! -s "$T/out" ]'

t "check output parses back to itself" eval '"$S" check "$here/etc/sluice.conf" >n1.conf &&
	"$S" check n1.conf >n2.conf && cmp -s n1.conf n2.conf'
t "a config with errors stops other verbs" eval 'run 1 "$S" -c bad.conf allow list && has "^bad.conf:2:" "$T/err"'
t "a missing -c file is an error" run 1 "$S" -c "$T/nope.conf" allow list

mkdir -p cwd/etc && printf 'state %s/cwdstate\nmode observe\n' "$T" >cwd/etc/sluice.conf
t "etc/sluice.conf in the working directory is found" eval '(cd cwd && "$S" check) | grep -q "^mode observe"'
t "SLUICE_CONFIG wins over etc/sluice.conf" eval '(cd cwd && SLUICE_CONFIG=$T/sluice.conf "$S" check) | grep -q "^mode enforce"'
t "without any config check prints the defaults" eval '(cd "$T/state" 2>/dev/null || cd /; env -u SLUICE_CONFIG "$S" check) | grep -q "^listen 127.0.0.1:3128"'

# --- allow -------------------------------------------------------------------

t "allow add creates the state dir and the store" eval 'run 0 $C allow add Example.COM &&
	[ "$(stat -c %a "$T/state")" = 700 ] && grep -q "^example.com permanent [0-9]*$" "$store"'
t "allow list shows the grant and the config grant" eval 'run 0 $C allow list &&
	grep -Eq "^example.com +permanent +never " "$T/out" &&
	grep -Eq "^config.example +config +never +-" "$T/out"'
t "allow add once with a ttl" eval 'run 0 $C allow add "*.once.example:8443" --level once --ttl 90 &&
	grep -q "^\*.once.example:8443 once [0-9]* [0-9]*$" "$store" && run 0 $C allow list &&
	grep -Eq "^\*.once.example:8443 +once +in 1m(29|30|31)s " "$T/out"'
t "once defaults to 120 s" eval 'run 0 $C allow add d.example --level once && run 0 $C allow list &&
	grep -Eq "^d.example +once +in (2m1s|2m0s|1m59s) " "$T/out"'
t "--ttl needs --level once" run 2 $C allow add x.example --ttl 60
t "a bad level is a usage error" run 2 $C allow add x.example --level forever
t "a bad grant is refused" eval 'run 1 $C allow add "*.com" && has "^allow: bad grant \"\*.com\"" "$T/err"'
t "a new grant replaces the same pattern" eval 'run 0 $C allow add example.com --level once &&
	[ "$(grep -c "^example.com " "$store")" = 1 ] && grep -q "^example.com once " "$store"'

t "allow add --for stores each scope, canonical" eval 'run 0 $C allow add f.example --for 10.0.0.5@lab --for container:0123456789AB &&
	grep -q "^f.example permanent [0-9]* for=10.0.0.5@lab for=container:0123456789ab$" "$store" &&
	has "added f.example for 10.0.0.5@lab,container:0123456789ab permanent" "$T/out"'
t "the same pattern for another scope is another grant" eval 'run 0 $C allow add f.example --for user &&
	[ "$(grep -c "^f.example " "$store")" = 2 ] && run 0 $C allow list &&
	grep -Eq "^f.example +permanent +never .* user$" "$T/out"'
t "the same scopes in another order replace it" eval 'run 0 $C allow add f.example --for container:0123456789ab --for 10.0.0.5@lab --level once &&
	[ "$(grep -c "^f.example " "$store")" = 2 ] && grep -q "^f.example once .* for=container:0123456789ab for=10.0.0.5@lab$" "$store" &&
	has "^replaced f.example" "$T/out"'
t "a bad --for is refused and changes nothing" eval 'cp "$store" before-for && run 1 $C allow add g.example --for 10.0.0.1@bad/net &&
	has "allow: bad --for \"10.0.0.1@bad/net\": expected ADDR@NET" "$T/err" && cmp -s "$store" before-for'
t "--for a name with no engine snapshot is refused" eval 'run 1 $C allow add g.example --for web &&
	has "no container named web in the engine" "$T/err" && cmp -s "$store" before-for'
t "more than 8 --for is a usage error" run 2 $C allow add g.example --for 1.0.0.1 --for 1.0.0.2 --for 1.0.0.3 \
	--for 1.0.0.4 --for 1.0.0.5 --for 1.0.0.6 --for 1.0.0.7 --for 1.0.0.8 --for 1.0.0.9
t "rm without --for leaves the scoped grants and names them" eval 'run 1 $C allow rm f.example &&
	has "the store grants it for: user; container:0123456789ab,10.0.0.5@lab" "$T/err" &&
	[ "$(grep -c "^f.example " "$store")" = 2 ]'
t "rm --for takes exactly that grant" eval 'run 0 $C allow rm f.example --for user &&
	[ "$(grep -c "^f.example " "$store")" = 1 ] && hasnt "for=user" "$store" && has "removed f.example for user" "$T/out"'
printf 'allow a.example for=user for=10.0.0.1@x\nallow b.example for=web\n' >scoped.conf
t "check: a config allow with for= prints normalised, a name is an error" eval 'run 1 "$S" check scoped.conf &&
	has "^scoped.conf:2: allow b.example: for=web: a container name cannot be told from a stamp" "$T/err"'
printf 'allow a.example for=user for=10.0.0.1@x\n' >scoped.conf
t "check: for= scopes are written back" eval 'run 0 "$S" check scoped.conf &&
	has "^allow a.example for=user for=10.0.0.1@x$" "$T/out"'

t "session without proxy.run fails" eval 'run 1 $C allow add s.example --level session &&
	has "allow: no running sluice-proxy ($T/state/proxy.run missing); a session grant lasts only while it runs" "$T/err" &&
	hasnt "^s.example" "$store"'
printf '0123456789abcdef\n' >"$T/state/proxy.run"
t "a proxy.run no running proxy holds a lock on is refused" eval 'run 1 $C allow add s.example --level session &&
	has "allow: no running sluice-proxy ($T/state/proxy.run is left from one that stopped)" "$T/err" &&
	hasnt "^s.example" "$store"'
# stand in for a running proxy: it holds a shared flock on proxy.run
exec 9<"$T/state/proxy.run"
flock -s 9
t "session with proxy.run records the run id" eval 'run 0 $C allow add s.example --level session &&
	grep -q "^s.example session [0-9]* 0123456789abcdef$" "$store" && run 0 $C allow list &&
	grep -Eq "^s.example +session +when proxy stops" "$T/out"'
printf 'fedcba9876543210\n' >"$T/state/proxy.run"
t "a session grant of another run is shown as ended" eval 'run 0 $C allow list &&
	grep -Eq "^s.example +session +ended" "$T/out"'
printf 'nonsense\n' >"$T/state/proxy.run"
t "a malformed proxy.run is refused" run 1 $C allow add s2.example --level session
exec 9<&-
rm -f "$T/state/proxy.run"

t "allow list --json" eval 'run 0 $C allow list --json &&
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert {g[\"grant\"] for g in d} >= {\"config.example\",\"example.com\",\"s.example\"}, d" "$T/out"'

t "allow rm removes a grant" eval 'run 0 $C allow rm d.example && hasnt "^d.example " "$store"'
t "allow rm of an absent grant fails" eval 'run 1 $C allow rm d.example && has "no grant d.example" "$T/err"'
t "allow rm of a config grant says where it is" eval 'run 1 $C allow rm config.example && has "config file" "$T/err"'

echo "expired.example once 1000 2000" >>"$store"
t "an expired once grant is listed as expired" eval 'run 0 $C allow list && grep -Eq "^expired.example +once +expired" "$T/out"'
t "a rewrite prunes expired once grants" eval 'run 0 $C allow add p.example && hasnt "^expired.example" "$store"'

cp "$store" good-store
printf '%s\n' "this is not a grant" >>"$store"
cp "$store" damaged-store
line=$(wc -l <"$store")
t "a damaged store refuses add with file:line" eval 'run 1 $C allow add new.example &&
	has "^allow: $store:$line: .*; repair or delete that file (deleting means no grants)" "$T/err" &&
	cmp -s "$store" damaged-store'
t "a damaged store refuses rm" eval 'run 1 $C allow rm example.com && cmp -s "$store" damaged-store'
t "a damaged store refuses list" eval 'run 1 $C allow list && has "^allow: $store:$line:" "$T/err"'
cp good-store "$store"

pids=()
for i in $(seq 1 20); do
	$C allow add "host$i.parallel.example" >/dev/null 2>"$T/par$i.err" &
	pids+=($!)
done
par_ok=true
for p in "${pids[@]}"; do wait "$p" || par_ok=false; done
t "20 concurrent adds all land" eval '$par_ok && [ "$(grep -c "^host[0-9]*.parallel.example permanent" "$store")" = 20 ] &&
	grep -q "^example.com " "$store"'
t "no temporary files are left behind" eval '[ -z "$(ls -A "$T/state" | grep -v -e "^grants$" -e "^grants.lock$")" ]'

# --- log ---------------------------------------------------------------------

log=$T/state/network.log
row() { # ts conn method host port path status decision reason grant
	local path=null grant=null
	[ "$6" != - ] && path="\"$6\""
	[ "${10}" != - ] && grant="\"${10}\""
	printf '{"ts":"%s","conn":%s,"req":1,"run":"0123456789abcdef","who":"unattributed","client":"127.0.0.1:4%s","kind":"%s","method":"%s","host":"%s","port":%s,"path":%s,"status":%s,"decision":"%s","reason":"%s","grant":%s,"dialed":null,"up":0,"down":0,"ms":1.250,"dns_ms":null,"connect_ms":null,"ua":"curl/7.88.1","detail":null}\n' \
		"$1" "$2" "$2" "$([ "$3" = CONNECT ] && echo tunnel || echo http)" "$3" "$4" "$5" "$path" "$7" "$8" "$9" "$grant"
}
{
	row 2026-11-30T03:01:01.000Z 1 CONNECT example.com 443 - 200 allow granted "example.com (permanent)"
	row 2026-11-30T03:01:02.000Z 2 GET api.example.org 80 /v1/items 403 refuse not-granted -
	echo '{"ts": "2026-11-30T03:01:02.5Z", truncated'
	row 2026-11-30T03:01:03.000Z 3 GET cdn.example.org 80 /img.png 403 observe not-granted -
	row 2026-11-30T03:01:04.000Z 4 CONNECT evil.example 443 - 403 refuse not-granted -
	row 2026-11-30T03:01:05.000Z 5 CONNECT example.org 443 - 403 refuse not-granted -
} >"$log"

t "log prints a table of every row" eval 'run 0 $C log && [ "$(wc -l <"$T/out")" = 6 ] &&
	has "^TIME *WHO *DECISION *STATUS *METHOD *HOST:PORT *PATH *REASON *GRANT" "$T/out" &&
	has "example.com:443" "$T/out" && has "/v1/items" "$T/out" && has "example.com (permanent)" "$T/out"'
t "log warns about the unreadable row and goes on" eval 'run 0 $C log &&
	[ "$(cat "$T/err")" = "log: $log:3: unreadable row" ]'
t "log --json prints matching lines unchanged, a principal appended" eval 'run 0 $C log --json &&
	sed "s/,\"principal\":{[^}]*}}\$/}/" "$T/out" | cmp -s - <(grep -v truncated "$log") &&
	[ "$(grep -c ",\"principal\":{\"kind\":" "$T/out")" = "$(wc -l <"$T/out")" ]'
t "log --host exact" eval 'run 0 $C log --json --host EXAMPLE.com. &&
	[ "$(wc -l <"$T/out")" = 1 ] && has "\"conn\":1," "$T/out"'
t "log --host *.suffix covers subdomains only" eval 'run 0 $C log --json --host "*.example.org" &&
	[ "$(wc -l <"$T/out")" = 2 ] && hasnt "\"host\":\"example.org\"" "$T/out"'
t "log --decision" eval 'run 0 $C log --json --decision refuse && [ "$(wc -l <"$T/out")" = 3 ] &&
	hasnt "\"decision\":\"allow\"" "$T/out"'
t "log -n keeps the last rows" eval 'run 0 $C log --json -n 2 && [ "$(wc -l <"$T/out")" = 2 ] &&
	has "\"conn\":4," "$T/out" && has "\"conn\":5," "$T/out"'
t "log filters combine with -n" eval 'run 0 $C log --json --decision refuse -n 1 && [ "$(wc -l <"$T/out")" = 1 ] &&
	has "\"conn\":5," "$T/out"'
t "log --decision checks its value" run 2 $C log --decision maybe
t "a missing log file is an error" eval 'run 1 "$S" -c "$T/cwd/etc/sluice.conf" log && has "^log: open " "$T/err"'

$C log --json -f >follow.out 2>follow.err &
follow_pid=$!
sleep 0.5
row 2026-11-30T03:02:00.000Z 6 GET appended.example 80 /x 403 refuse not-granted - >>"$log"
sleep 0.6
mv "$log" "$log.1"
row 2026-11-30T03:02:01.000Z 7 GET rotated.example 80 /y 403 refuse not-granted - >"$log"
sleep 0.8
kill "$follow_pid" 2>/dev/null
wait "$follow_pid" 2>/dev/null
follow_pid=
t "log -f follows appends and rotation" eval 'grep -q "\"conn\":5," follow.out &&
	grep -q appended.example follow.out && grep -q rotated.example follow.out &&
	[ "$(grep -c appended.example follow.out)" = 1 ]'

lab_done
