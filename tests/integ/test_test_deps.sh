#!/bin/bash
# test_test_deps.sh: tools/test-deps, the check `make test` runs first, fails by
# name when a module or program the tests use is not from deps/debian-packages.
# Needs no namespace. The lists it is given are the real one with one line taken
# out, so each failure below is one a fresh machine would meet.
set -u
T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-testdeps.XXXXXX")
trap 'rm -rf "$T"' EXIT
source "$(dirname "$0")/clitest.sh"

list=$here/deps/debian-packages
td=$here/tools/test-deps

t "the tree's own list provides every module and program the tests use" run 0 "$td"
t "... and it says how many it checked" has "python modules and [0-9]* programs" "$T/out"

grep -vx 'python3-yaml' "$list" >"$T/no-yaml"
t "a list without python3-yaml fails (test_install imports yaml)" run 1 "$td" --list "$T/no-yaml"
t "... naming the module, the test and the package" \
	has "python module yaml (tests/integ/test_install.sh): package python3-yaml, not in deps/debian-packages" "$T/err"

grep -vx 'tmux' "$list" >"$T/no-tmux"
t "a list without tmux fails (test_watch runs it)" run 1 "$td" --list "$T/no-tmux"
t "... naming the program and its package" has "program tmux (.*): package tmux, not in" "$T/err"

grep -vx 'dnsutils' "$list" >"$T/no-dig"
t "what a listed package pulls in counts: without dnsutils, dig (bind9-dnsutils) is named" \
	eval 'run 1 "$td" --list "$T/no-dig" && has "program dig (.*): package bind9-dnsutils" "$T/err"'
lab_done
