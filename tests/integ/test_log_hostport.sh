#!/bin/bash
# test_log_hostport.sh: how the CLI writes a row's host and port (host_port_format
# in lib/host.c), on rows written here by hand in the network log's format:
# the log table's HOST:PORT cell, --refused's and --by-who's grant target (the
# scheme's own port left off) and the grant `allow approve` names. An IPv6
# address in brackets, an IPv4 address and a name as they are; a port the row
# does not hold as a whole number written as the row has it ("-" for none).
#
# Needs no network and no root: the state directory lives in a temporary
# directory removed at exit. Prints "ok - name" or "not ok - name" per check
# and exits 1 if any failed.
set -u

T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-hostport.XXXXXX")
trap 'rm -rf "$T"' EXIT

source "$(dirname "$0")/clitest.sh"

cd "$T" || exit 1
printf 'state %s/state\n' "$T" >sluice.conf
C="$S -c $T/sluice.conf"
mkdir -m 700 state

# r N KIND HOST PORT DECISION STATUS: one exchange's row; PORT "-" leaves it out.
# Rows of 2020: older than approve's day, so approve only names the grant.
r() {
	local port= reason=not-granted
	[ "$4" = - ] || port=",\"port\":$4"
	[ "$5" = allow ] && reason=granted
	printf '{"ts":"2020-12-01T17:00:0%s.000Z","conn":%s,"kind":"%s","method":"GET","host":"%s"%s,"path":"/","status":%s,"decision":"%s","reason":"%s","refusal":"000000000000000%s"}\n' \
		"$1" "$1" "$2" "$3" "$port" "$6" "$5" "$reason" "$1"
}
{
	r 1 http 2001:db8::10 8080 allow 200
	r 2 tunnel ::1 443 refuse 403
	r 3 http 10.0.0.5 8080 refuse 403
	r 4 http b.test - refuse 403
	r 5 http fd00::1 70000 refuse 403
	r 6 https c.test 1.5 refuse 403
	r 7 http fd00::7 80 refuse 403
} >state/network.log

t "the rows are read" eval 'run 0 $C log && [ "$(wc -l <"$T/out")" = 8 ]'
t "log: an IPv6 host in brackets, its port after" has " \[2001:db8::10\]:8080 " "$T/out"
t "... a CONNECT's IPv6 host" has " \[::1\]:443 " "$T/out"
t "... an IPv4 host and a name as they are" eval 'has " 10\.0\.0\.5:8080 " "$T/out" &&
	has " c\.test:1\.5 " "$T/out"'
t "... no port: -" has " b\.test:- " "$T/out"
t "... a port past 65535 as the row has it" has " \[fd00::1\]:70000 " "$T/out"

t "--refused: the grant target, the scheme's port left off, IPv6 still in brackets" eval '
	run 0 $C log --refused && grep -Eq " \[::1\] +1 " "$T/out" && grep -Eq " \[fd00::7\] +1 " "$T/out"'
t "... another port kept" eval 'grep -Eq " 10\.0\.0\.5:8080 +1 " "$T/out" &&
	grep -Eq " \[fd00::1\]:70000 +1 " "$T/out"'
t "... no port: the host alone" eval 'grep -Eq " b\.test +1 " "$T/out"'
t "--by-who: the same target" eval 'run 0 $C log --by-who &&
	grep -Eq " \[2001:db8::10\]:8080 +1 +0 +0 " "$T/out"'

t "approve names the grant: an IPv6 host in brackets" eval '
	run 1 $C allow approve 0000000000000007 --yes && has "run: sluice allow add \[fd00::7\]$" "$T/err"'
t "... with its port" eval 'run 1 $C allow approve 0000000000000003 --yes &&
	has "run: sluice allow add 10\.0\.0\.5:8080$" "$T/err"'
t "... a CONNECT to 443: the host alone" eval 'run 1 $C allow approve 0000000000000002 --yes &&
	has "run: sluice allow add \[::1\]$" "$T/err"'

lab_done
