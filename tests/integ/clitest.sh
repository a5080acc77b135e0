# clitest.sh: the harness of the CLI tests that need no namespace (cli.sh,
# test_ca.sh, test_ports.sh). Source it after setting T (a temporary
# directory the script removes): it sets S (the built sluice) and failed,
# and defines ok, not_ok, t, run, has and hasnt.
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${SLUICE_BUILD:-build}
case $build in /*) ;; *) build=$here/$build ;; esac
S=$build/sluice
[ -x "$S" ] || { echo "not ok - binary $S missing"; exit 1; }

failed=0
ok() { echo "ok - $1"; }
# not_ok NAME [SEEN]
not_ok() { echo "not ok - $1${2:+ ($2)}"; failed=1; }
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
