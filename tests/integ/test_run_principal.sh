#!/bin/bash
# integ: alone (counts the 1000 refusals once the first suppressed row is out: a flood slowed by load spreads them over more windows)
# test_run_principal.sh: a sandbox does not choose its own principal
# (issue 27, item 3). Inside a run every connection is one principal,
# whatever loopback address CMD binds: the run's forwarder stamps one fixed
# source (sluice-forward --src), so 1000 source addresses are one principal
# in the log and a grant's budget of 3 requests serves 3, not 3000. A run's
# refusal approved (`allow approve`) still serves that run (granted to its
# project since issue 28: test_run_project.sh). Real `sluice run`, real
# proxy, real origin.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' 'local-data: "third.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.10"'
lab_run_project 43300
cp "$INTEG_DIR/many_src.py" "$LAB_DIR/many_src.py"
chmod 755 "$LAB_DIR/many_src.py"

# --- 1000 source addresses, one principal, a budget of 3 serves 3
out=$(sl allow add other.test --max-requests 3 2>&1) || not_ok "allow add other.test --max-requests 3" "$out"
out=$(srun -- /usr/bin/python3 "$LAB_DIR/many_src.py" 1000 /rp- other.test 2>&1)
expect_eq "1000 connections from 1000 source addresses in one run: 3 served, the rest 403 budget" \
	"200 3 403 997" "$(grep -E '^[0-9a-z]+ [0-9]+$' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... the origin saw exactly 3 (and it was up, recording)" 3 "$(inetq ev=req 'line~/rp-')"
wait_log 10 'path~/rp-' reason=budget
expect_eq "... the log names one principal for all 1000" 1 \
	"$("$PY" - "$NETLOG" <<'PY'
import json, sys
who = set()
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if (r.get("path") or "").startswith("/rp-"):
        who.add(r.get("who"))
print(len(who))
PY
)"
expect_re "... the run's own: 127.0.0.1 on the run's network" '^127\.0\.0\.1@sluice-[0-9a-f]{12}$' \
	"$(logq 'path~/rp-' --field who)"
# past the row budget (log-row-rate) a principal's refusals are counted in a suppressed row
wait_log 5 kind=suppressed
expect_eq "... all 1000 are on record: rows written, and refusals a suppressed row counts" 1000 \
	"$(( $(logq 'path~/rp-' --count) + $(logq kind=suppressed --field rows | awk '{ s += $1 } END { print s + 0 }') ))"
expect_re "... which names the same principal" '^127\.0\.0\.1@sluice-[0-9a-f]{12}$' \
	"$(logq kind=suppressed --field who | sort -u)"

# --- a run's refusal approved still serves that run, whatever address it binds next
"${SRUN[@]}" -- sh -c "curl -s -o /dev/null -w 'first %{http_code}\n' --max-time 5 --interface 127.0.0.5 http://third.test/ap-1;
	$(until_go ap); for i in \$(seq 50); do c=\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.0.9 http://third.test/ap-2);
	[ \"\$c\" = 200 ] && break; sleep 0.1; done; echo \"second \$c\"" >"$LAB_DIR/ap.out" 2>&1 &
apid=$!
LAB_PIDS+=("$apid")
wait_until 30 grep -q '^first' "$LAB_DIR/ap.out" || not_ok "the run asks for third.test" "$(cat "$LAB_DIR/ap.out")"
expect_eq "a run's request to an ungranted host is refused" "first 403" "$(grep '^first' "$LAB_DIR/ap.out")"
wait_log 5 path=/ap-1
rid=$(logq path=/ap-1 --field refusal)
out=$(sl allow approve --yes "$rid" 2>&1)
expect_re "allow approve of it grants it to the run's principal, its project's (issue 28)" \
	"added third\\.test for project:[A-Za-z0-9._-]+-[0-9a-f]{16} once" "$out"
go ap
wait "$apid"
expect_eq "... which serves the run from another source address" "second 200" "$(grep '^second' "$LAB_DIR/ap.out")"
expect_eq "... and no run is left (the grants are this test's own)" "" "$(run_leftovers | sed "s/grant [a-z.]* //g")"

lab_done
