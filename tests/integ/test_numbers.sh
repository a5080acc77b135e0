#!/bin/bash
# test_numbers.sh: the CLI's numeric options read digits and nothing else
# (lib/digits.h): a blank, a '+' or a '-' before the digits, or nothing at
# all, is a usage error (exit 2) naming the option, where strtol/strtoul once
# took " 300", "+300", "" (as 0) and " -1" (as ULONG_MAX). The numbers they
# always took still work.
#
# Needs no network and no root: every refused command stops at its
# arguments; each garbage value is followed by something that makes the
# command fail at once had the value been taken (an extra argument, a
# missing config), so nothing runs either way. Prints "ok - name" or
# "not ok - name" per check and exits 1 if any failed.
set -u

T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-numbers.XXXXXX")
trap 'rm -rf "$T"' EXIT
source "$(dirname "$0")/clitest.sh"
printf 'agent:100000:65536\n' >"$T/subuid"
NOCONF=$T/no-such.conf

# refused NAME STDERR_TEXT COMMAND...: exit 2 and the text (fixed string) on stderr
refused() {
	local name=$1 text=$2
	shift 2
	if run 2 "$@" && grep -qF -- "$text" "$T/err"; then
		ok "$name"
	else
		not_ok "$name" "stderr: $(cat "$T/err")"
	fi
}

# --- sluice wall render: --port-base, --mark, --transparent, --log-group, --user ---

render() {
	"$S" wall render sandbox --subuid "$T/subuid" --gateway 192.168.5.2 --resolver 192.168.5.3 \
		--forwarder 10.88.0.1:3128 --port-base 41000 "$@"
}
t "wall render takes --user 65534 --port-base 41000" run 0 render --user 65534 --port-base 41000
t "wall render takes --port-base with leading zeros" run 0 render --user 65534 --port-base 041000
t "wall render takes --mark in hex and octal" eval 'run 0 render --user 65534 --mark 0x53 &&
	run 0 render --user 65534 --mark 0123 && run 0 render --user 65534 --mark 83'
for v in " 41000" "+41000" "" "-1" "41000 " "0x41000"; do
	refused "wall render refuses --port-base \"$v\"" "wall: bad --port-base \"$v\": 1 to " \
		render --user 65534 --port-base "$v"
done
for v in " 83" "+83" "+0x53" "0x" "08" ""; do
	refused "wall render refuses --mark \"$v\"" "wall: bad --mark \"$v\"" \
		render --user 65534 --mark "$v"
done
refused 'wall render refuses --transparent " 3129"' 'wall: bad --transparent " 3129": a port' \
	render --user 65534 --transparent " 3129"
refused 'wall render refuses --log-group "+7"' 'wall: bad --log-group "+7": 0 to 65535' \
	render --user 65534 --log-group "+7"
# a --user that names no user and is not a uid is an error (exit 1), as it always was
for v in "+65534" " 65534" "65534 "; do
	t "wall render refuses --user \"$v\" (not a uid)" eval \
		'run 1 render --user "$v" && grep -qF -- "wall: --user \"$v\": no such user" "$T/err"'
done

# --- sluice wall denied: --group, --count, --timeout (an extra argument after) ---

refused 'wall denied refuses --group " 7"' 'wall denied: bad --group " 7": 0 to 65535' \
	"$S" wall denied --group " 7" extra
refused 'wall denied refuses --count " -1" (once ULONG_MAX)' 'wall denied: bad --count " -1"' \
	"$S" wall denied --group 7 --count " -1" extra
refused 'wall denied refuses --count "+3"' 'wall denied: bad --count "+3"' \
	"$S" wall denied --group 7 --count "+3" extra
refused 'wall denied refuses --timeout "+5"' 'wall denied: bad --timeout "+5": 1 to ' \
	"$S" wall denied --group 7 --timeout "+5" extra
refused 'wall denied still refuses --count 0' 'wall denied: bad --count "0"' \
	"$S" wall denied --group 7 --count 0 extra

# --- sluice verify --timeout-ms (an extra argument after) ---

for v in " 300" "+300" "300 " "" "0" "60001"; do
	refused "verify refuses --timeout-ms \"$v\"" "--timeout-ms wants 1..60000" \
		"$S" verify --timeout-ms "$v" extra
done
refused "verify takes --timeout-ms 300 (then the extra argument is the error)" \
	"unexpected argument" "$S" verify --timeout-ms 300 extra

# --- sluice key rotate --grace (a config that does not exist after) ---

for v in "" " 600" "+600" "-0" "2592001"; do
	refused "key rotate refuses --grace \"$v\"" "key: bad grace \"$v\": 0 to 2592000 seconds" \
		"$S" -c "$NOCONF" key rotate --grace "$v"
done
t "key rotate takes --grace 600 (then the missing config is the error)" \
	eval 'run 1 "$S" -c "$NOCONF" key rotate --grace 600 && hasnt "bad grace" "$T/err"'

lab_done
