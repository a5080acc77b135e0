#!/bin/bash
# test_log_dns.sh: the reader of the DNS log, `sluice log --dns`, on rows
# written here by hand in the format sluice-dns is to write (one JSON object
# per query; docs/network-log.md). It tests the reader only, not the daemon:
# each filter (--host against the queried name, --decision), -n, --json (the
# rows as they are), --refused per name with the grant command, -f across an
# append, a rotation and a truncation, a malformed line and a row of another
# kind named by line and skipped, a missing file, the dns-log directive, the
# options --dns rules out, and a chained DNS log verified by naming its files.
#
# Needs no network and no root: the state directory lives in a temporary
# directory removed at exit. Prints "ok - name" or "not ok - name" per check
# and exits 1 if any failed.
set -u

T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-logdns.XXXXXX")
follow_pid= # the -f reader, killed at exit if a check left it running
trap '[ -z "$follow_pid" ] || kill "$follow_pid" 2>/dev/null; rm -rf "$T"' EXIT

source "$(dirname "$0")/clitest.sh"

cd "$T" || exit 1
printf 'state %s/state\n' "$T" >sluice.conf
C="$S -c $T/sluice.conf"
mkdir -m 700 state
dlog=$T/state/dns.log

# q TS CLIENT NAME TYPE DECISION REASON GRANT RCODE KEPT REMOVED CACHE MS: one
# query's row; "-" writes null (NAME, TYPE, GRANT, RCODE, KEPT, REMOVED)
q() {
	local v=() a
	for a in "$3" "$4" "$7" "$8"; do
		if [ "$a" = - ]; then v+=(null); else v+=("\"$a\""); fi
	done
	for a in "$9" "${10}"; do
		if [ "$a" = - ]; then v+=(null); else v+=("$a"); fi
	done
	printf '{"ts":"%s","kind":"dns","client":"%s","transport":"udp","name":%s,"type":%s,"decision":"%s","reason":"%s","grant":%s,"rcode":%s,"kept":%s,"removed":%s,"upstream":"192.0.2.2:53","cache":%s,"ms":%s,"detail":null}\n' \
		"$1" "$2" "${v[0]}" "${v[1]}" "$5" "$6" "${v[2]}" "${v[3]}" "${v[4]}" "${v[5]}" "${11}" "${12}"
}
{
	q 2026-12-01T17:00:00.123Z 127.0.0.1:53124 api.test A allow granted api.test NOERROR 1 0 false 1.234
	q 2026-12-01T17:00:01.000Z 127.0.0.1:53125 cdn.api.test AAAA allow granted '*.api.test' NOERROR 2 0 true 0.05
	q 2026-12-01T17:00:02.000Z '[fd00::5]:40000' evil.test A refuse not-granted - REFUSED 0 0 false 0.1
	echo '{"ts":"2026-12-01T17:00:02.500Z","kind":"dns", truncated'
	q 2026-12-01T17:00:03.000Z 127.0.0.1:53127 evil.test TXT refuse not-granted - REFUSED 0 0 false 0.1
	q 2026-12-01T17:00:04.000Z 127.0.0.1:53128 api.test TXT refuse type api.test NOERROR 0 0 false 0.2
	q 2026-12-01T17:00:05.000Z 127.0.0.1:53129 rebind.test A refuse denied-ip rebind.test NOERROR 0 2 false 3.5
	echo '{"ts":"2026-12-01T17:00:05.500Z","conn":1,"kind":"http","host":"net.test","decision":"allow"}'
	q 2026-12-01T17:00:06.000Z 127.0.0.1:53130 - - error malformed - FORMERR - - false 0.01
	q 2026-12-01T17:00:07.000Z 127.0.0.1:53131 slow.test A error upstream-timeout slow.test SERVFAIL - - false 2000.5
	q 2026-12-01T17:00:08.000Z 127.0.0.1:53132 obs.test HTTPS observe not-granted - NOERROR 1 0 false 4
	q 2026-12-01T17:00:09.000Z 127.0.0.1:53133 x.api.test TYPE65534 allow granted '*.api.test' NOERROR 1 0 false 1
} >"$dlog"
# the network log is there too; --dns must not read it, log without --dns must
echo '{"ts":"2026-12-01T17:00:00.000Z","conn":9,"kind":"http","host":"netonly.test","decision":"allow"}' \
	>"$T/state/network.log"
good_rows() { grep -v -e truncated -e '"kind":"http"' "$dlog"; }
# names [FILE]: the "name" of each row of FILE (default $T/out), None for null
names() { "$PY" -c 'import json,sys; print(" ".join(str(json.loads(l)["name"]) for l in sys.stdin))' <"${1:-$T/out}"; }

# --- the table -------------------------------------------------------------------

t "log --dns prints a table of every query's row" eval 'run 0 $C log --dns &&
	[ "$(wc -l <"$T/out")" = 11 ] &&
	has "^TIME *CLIENT *TYPE *NAME *DECISION *REASON *RCODE *KEPT/REMOVED *CACHE *MS$" "$T/out"'
t "... a row's cells: client, type, name, decision, reason, rcode, kept/removed, cache, ms" eval '
	grep -Eq " 127\.0\.0\.1:53125 +AAAA +cdn\.api\.test +allow +granted +NOERROR +2/0 +hit +0\.05$" "$T/out" &&
	grep -Eq " \[fd00::5\]:40000 +A +evil\.test +refuse +not-granted +REFUSED +0/0 +miss +0\.1$" "$T/out" &&
	grep -Eq " TYPE65534 +x\.api\.test +allow " "$T/out"'
t "... null cells are shown as -" eval 'grep -Eq " 127\.0\.0\.1:53130 +- +- +error +malformed +FORMERR +- +miss +0\.01$" "$T/out"'
t "... it reads the DNS log only, not the network log" hasnt netonly.test "$T/out"
t "... a malformed line and a row of another kind are named by line and skipped" eval '
	[ "$(cat "$T/err")" = "log: $dlog:4: unreadable row
log: $dlog:8: not a dns row" ]'
t "log without --dns still reads the network log" eval 'run 0 $C log --json && has netonly.test "$T/out" &&
	hasnt api.test "$T/out"'

# --- --json and the filters ---------------------------------------------------------

t "log --dns --json prints the rows unchanged (no principal added)" eval 'run 0 $C log --dns --json &&
	good_rows | cmp -s - "$T/out"'
t "--host exact matches the queried name" eval 'run 0 $C log --dns --json --host API.test. &&
	[ "$(names)" = "api.test api.test" ]'
t "--host *.suffix covers subdomains only" eval 'run 0 $C log --dns --json --host "*.api.test" &&
	[ "$(names)" = "cdn.api.test x.api.test" ]'
t "--decision refuse" eval 'run 0 $C log --dns --json --decision refuse &&
	[ "$(names)" = "evil.test evil.test api.test rebind.test" ]'
t "--decision error (a DNS row's decision)" eval 'run 0 $C log --dns --json --decision error &&
	[ "$(names)" = "None slow.test" ]'
t "--decision observe" eval 'run 0 $C log --dns --json --decision observe && [ "$(names)" = obs.test ]'
t "-n keeps the last rows" eval 'run 0 $C log --dns --json -n 2 && [ "$(names)" = "obs.test x.api.test" ]'
t "filters combine with -n, in the table too" eval 'run 0 $C log --dns --decision refuse -n 1 &&
	[ "$(wc -l <"$T/out")" = 2 ] && has " rebind.test " "$T/out"'

# --- --refused -----------------------------------------------------------------------

t "--dns --refused: per name, count, last reason and time, the grant command" eval '
	run 0 $C log --dns --refused && has "^NAME *COUNT *LAST *REASON *TO GRANT$" "$T/out" &&
	[ "$(wc -l <"$T/out")" = 4 ] &&
	grep -Eq "^evil\.test +2 +[0-9]{2}-[0-9]{2} [0-9:]{8} +not-granted +sluice allow add evil\.test$" "$T/out" &&
	grep -Eq "^api\.test +1 +[-0-9: ]{14} +type +-$" "$T/out" &&
	grep -Eq "^rebind\.test +1 +[-0-9: ]{14} +denied-ip +-$" "$T/out"'
t "... --json" eval 'run 0 $C log --dns --refused --json && "$PY" -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
want = [{\"name\": \"api.test\", \"count\": 1, \"last\": \"2026-12-01T17:00:04.000Z\", \"reason\": \"type\", \"grant\": None},
        {\"name\": \"evil.test\", \"count\": 2, \"last\": \"2026-12-01T17:00:03.000Z\", \"reason\": \"not-granted\",
         \"grant\": \"sluice allow add evil.test\"},
        {\"name\": \"rebind.test\", \"count\": 1, \"last\": \"2026-12-01T17:00:05.000Z\", \"reason\": \"denied-ip\", \"grant\": None}]
assert rows == want, rows
" "$T/out"'
t "... --decision observe: the queries observe mode let through" eval '
	run 0 $C log --dns --refused --decision observe && [ "$(wc -l <"$T/out")" = 2 ] &&
	grep -Eq "^obs\.test +1 .* not-granted +sluice allow add obs\.test$" "$T/out"'

# --- options --dns rules out ------------------------------------------------------------

t "--dns --who is a usage error saying why" eval 'run 2 $C log --dns --who user &&
	has "^log: conflicting options \"--dns --who\": a DNS row names no principal" "$T/err"'
t "--dns --by-host is a usage error saying why" eval 'run 2 $C log --by-host --dns &&
	has "^log: conflicting options \"--dns --by-host\": " "$T/err"'
t "log verify --dns is a usage error naming the way to verify it" eval 'run 2 $C log verify --dns &&
	has "^log: conflicting options \"verify --dns\": .*sluice log verify FILE FILE.1" "$T/err"'
t "log --dns verify too" eval 'run 2 $C log --dns verify && has "^log: conflicting options \"--dns verify\"" "$T/err"'
t "--decision error without --dns is a usage error" eval 'run 2 $C log --decision error &&
	has "error only with --dns" "$T/err"'
t "--dns --refused --decision error is a usage error" eval 'run 2 $C log --dns --refused --decision error &&
	has "^log: conflicting options \"--refused --decision error\"" "$T/err"'
t "--dns --refused -f is a usage error" run 2 $C log --dns --refused -f
t "--dns --decision checks its value" run 2 $C log --dns --decision maybe

# --- where the file is ---------------------------------------------------------------------

mkdir -m 700 empty
printf 'state %s/empty\n' "$T" >empty.conf
t "a missing DNS log is an error naming the file and who writes it" eval 'run 1 "$S" -c "$T/empty.conf" log --dns &&
	[ "$(cat "$T/err")" = "log: open $T/empty/dns.log: no such file or directory; sluice-dns writes it (the config'"'"'s dns-log)" ] &&
	[ ! -s "$T/out" ]'
q 2026-12-01T18:00:00.000Z 127.0.0.1:1 elsewhere.test A allow granted elsewhere.test NOERROR 1 0 false 1 >other.log
printf 'dns-log %s/other.log\nstate %s/state\n' "$T" "$T" >other.conf
t "the dns-log directive names the file" eval 'run 0 "$S" -c "$T/other.conf" log --dns --json &&
	[ "$(names)" = elsewhere.test ]'

# --- -f: an append, a rotation, a truncation ---------------------------------------------

# wait_out PATTERN: until follow.out holds PATTERN (5 s at most)
wait_out() {
	local i
	for i in $(seq 50); do
		grep -q -- "$1" follow.out && return 0
		sleep 0.1
	done
	return 1
}
$C log --dns --json -n 1 -f >follow.out 2>follow.err &
follow_pid=$!
t "-f starts with the last row (-n 1)" eval 'wait_out x.api.test && [ "$(wc -l <follow.out)" = 1 ]'
q 2026-12-01T17:01:00.000Z 127.0.0.1:2 appended.test A allow granted appended.test NOERROR 1 0 false 1 >>"$dlog"
t "-f picks up a row appended later" wait_out appended.test
mv "$dlog" "$dlog.1"
{
	q 2026-12-01T17:01:01.000Z 127.0.0.1:3 rotated.test A allow granted rotated.test NOERROR 1 0 false 1
	q 2026-12-01T17:01:02.000Z 127.0.0.1:4 rotated2.test A allow granted rotated2.test NOERROR 1 0 false 1
} >"$dlog"
t "-f follows a rotation to the new file" wait_out rotated2.test
q 2026-12-01T17:01:03.000Z 127.0.0.1:5 t.test A allow granted t.test NOERROR 1 0 false 1 >"$dlog.new"
cat "$dlog.new" >"$dlog" # truncated in place, shorter than before
t "-f starts over a file truncated in place" wait_out '"t.test"'
kill "$follow_pid" 2>/dev/null
wait "$follow_pid" 2>/dev/null
follow_pid=
t "... each row once, in order; on stderr only the first read's two bad lines" eval '
	[ "$(names follow.out)" = "x.api.test appended.test rotated.test rotated2.test t.test" ] &&
	[ "$(grep -vc -e "dns.log:4: unreadable row$" -e "dns.log:8: not a dns row$" follow.err)" = 0 ]'

# --- a chained DNS log (log-chain on: a trailing prev) -----------------------------------

"$PY" - "$T/chained/dns.log" <<'PYEOF'
import hashlib, os, sys
path = sys.argv[1]
os.makedirs(os.path.dirname(path), mode=0o700)
prev = None
out = []
for i in range(3):
    p = "null" if prev is None else '"%s"' % hashlib.sha256(prev).hexdigest()
    line = ('{"ts":"2026-12-01T17:02:0%d.000Z","kind":"dns","client":"127.0.0.1:%d","transport":"udp",'
            '"name":"c%d.test","type":"A","decision":"allow","reason":"granted","grant":"c%d.test",'
            '"rcode":"NOERROR","kept":1,"removed":0,"upstream":"192.0.2.2:53","cache":false,'
            '"ms":1.0,"detail":null,"prev":%s}' % (i, i, i, i, p)).encode()
    out.append(line)
    prev = line
open(path + ".1", "wb").write(b"\n".join(out[:2]) + b"\n")
open(path, "wb").write(out[2] + b"\n")
PYEOF
printf 'state %s/chained\n' "$T" >chained.conf
t "a chained DNS log reads as any other (prev kept in --json)" eval 'run 0 "$S" -c "$T/chained.conf" log --dns --json &&
	[ "$(names)" = c2.test ] && has "\"prev\":\"[0-9a-f]\{64\}\"}$" "$T/out"'
t "... and log verify checks it given its files" eval 'run 0 $C log verify "$T/chained/dns.log" "$T/chained/dns.log.1" &&
	has "chain holds" "$T/out"'

lab_done
