# clitest.sh: the harness of the CLI tests that need no namespace (cli.sh,
# test_ca.sh, test_ports.sh). Source it after setting T (a temporary
# directory the script removes): it sets S (the built sluice), takes ok,
# not_ok, expect_* and lab_done from lab.sh (the one assertion style of every
# integration file), and defines t, run, has and hasnt on them.
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${SLUICE_BUILD:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
S=$build/sluice
source "$here/tests/integ/lab.sh"
[ -x "$S" ] || lab_bail "binary $S is built"

# t NAME COMMAND...: the command's status decides
t() {
	local name=$1
	shift
	if "$@"; then ok "$name"; else not_ok "$name"; fi
}
# run EXPECTED_STATUS COMMAND...: stdout in $T/out, stderr in $T/err
run() {
	local want=$1 got
	shift
	"$@" >"$T/out" 2>"$T/err"
	got=$?
	[ "$got" -eq "$want" ] || { echo "# $*: status $got, expected $want" >&2; cat "$T/err" >&2; return 1; }
}
has() { grep -q -- "$1" "$2"; }
hasnt() { ! grep -q -- "$1" "$2"; }
