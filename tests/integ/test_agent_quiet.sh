#!/bin/bash
# test_agent_quiet.sh: a profile's quiet hosts, refused quietly (issue 28,
# item 10). `sluice run --agent claude` (claude's profile lists
# statsig.anthropic.com as quiet) runs curl, not the real CLI, against
# statsig.anthropic.com and other.test (an ordinary host nobody granted),
# both served by the lab's origin when dialed. The run hands the quiet host
# over (STATE/agents.conf: quiet HOST for=its principal). The quiet host:
# refused 403 with reason quiet, no refusal id, a Proxy-Status and body
# that say it is the profile's telemetry refused on purpose, its row still
# written; over HTTPS a plain 403 at the CONNECT (no refusal page); left
# out of `sluice log --refused` (shown with --all) and `--by-host`'s
# refusal count, of the request metrics (sluice_proxy_quiet_total counts
# it), of `sluice watch`'s refusal marks (in tmux); refused in a learn
# window too, so `sluice allow learn` does not offer it. Past the refusal-row
# budget (log-row-rate 1, burst 4 here), a flood of quiet tries spends a
# budget of its own: the run's next real refusal is still written, and the
# quiet rows' suppression row is left out of --refused too. other.test, the
# control: an ordinary refusal with an id, listed, marked and offered. A
# client of no run is not touched by the quiet line (its principal is the
# run's): an ordinary refusal.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
export SLUICE_AGENTS_DIR=$ROOT_DIR/etc/agents
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.10"' \
	'local-data: "statsig.anthropic.com. 300 IN A 203.0.113.10"'
command -v tmux >/dev/null || lab_bail "tmux is installed (deps/debian-packages)"
lab_run_project 44100
MP=9192
printf 'metrics-listen 127.0.0.1:%s\nlog-row-rate 1\nlog-row-burst 4\n' "$MP" >>"$CONF"
lab_run_proxy
lab_run_dns "$CONF"
AD=$LAB_DIR/quiet
mkdir -p "$AD"
chmod 0777 "$AD" # CMD runs as the sandbox user

# tries NAME: inside `sluice run --agent claude`, curl to good.test (the control: served), the
# quiet host and other.test (plain HTTP: the proxy's own answer is read), their codes, headers, bodies
tries() {
	local c="curl -s --max-time 10"
	SLUICE_RUN_TEST_HOOK="$SLUICE_RUN_TEST_HOOK; grep '^quiet ' $STATE/agents.conf >$AD/$1.handover; true" \
	ANTHROPIC_API_KEY=sk-ant-quiet-$$ timeout -k 5 60 "${SRUN[@]}" --agent claude -- sh -c "
		$c -o /dev/null -w '%{http_code}' http://good.test/q-$1 >$AD/$1.good
		$c -D $AD/$1.quiet.h -o $AD/$1.quiet.b -w '%{http_code}' http://statsig.anthropic.com/v1/rgstr-$1 >$AD/$1.quiet
		$c -o /dev/null -w '%{http_connect} %{http_code}' https://statsig.anthropic.com/tls-$1 >$AD/$1.tls
		$c -D $AD/$1.other.h -o $AD/$1.other.b -w '%{http_code}' http://other.test/o-$1 >$AD/$1.other
		true" >"$AD/$1.out" 2>&1
}
# scrape FILE: the proxy's metrics; mval FILE SERIES: one series' value (0 when absent)
scrape() { hx curl -s --max-time 5 -o "$1" -w '%{http_code}' "http://127.0.0.1:$MP/metrics"; }
mval() { awk -v k="$2" '$1 == k { v = $2 } END { print v == "" ? 0 : v }' "$1"; }

# --- enforce
tries e
expect_eq "control: inside the run, good.test is served" 200 "$(cat "$AD/e.good")"
expect_re "the run handed its quiet hosts over, for its principal" \
	'^quiet statsig\.anthropic\.com for=project:[^ ]+/claude quiet \*\.sentry\.io for=project:[^ ]+/claude $' \
	"$(tr '\n' ' ' <"$AD/e.handover" 2>/dev/null)"
expect_eq "control: other.test, granted to nobody, is refused 403" 403 "$(cat "$AD/e.other")"
expect_eq "... its row: an ordinary refusal with a refusal id" 1 \
	"$(logq path=/o-e decision=refuse reason=not-granted 'refusal!=null')"
expect_eq "the quiet host is refused 403" 403 "$(cat "$AD/e.quiet")"
expect_eq "... and still logged: its row, reason quiet, decision refuse" 1 \
	"$(logq host=statsig.anthropic.com path=/v1/rgstr-e decision=refuse reason=quiet)"
expect_eq "... with no refusal id (nothing to approve it by)" 0 \
	"$(logq host=statsig.anthropic.com 'refusal!=null')"
expect_re "... its Proxy-Status says it was refused on purpose" \
	'^sluice; error=http_request_denied; details=".*telemetry' "$(header_of "$(cat "$AD/e.quiet.h")" Proxy-Status)"
expect_re "... its body: the profile's telemetry, refused on purpose, nothing to grant" \
	"quiet host of the run.s agent profile: its telemetry, refused on purpose" "$(cat "$AD/e.quiet.b")"
expect_not_re "... and no command that would grant it" 'sluice allow' "$(cat "$AD/e.quiet.b")"
expect_eq "over HTTPS: a plain 403 at the CONNECT (no refusal page for telemetry)" "403 000" "$(cat "$AD/e.tls")"
expect_eq "... its row: a tunnel, reason quiet, no refusal id" 1 \
	"$(logq kind=tunnel host=statsig.anthropic.com decision=refuse reason=quiet refusal=null)"
expect_eq "metrics: scraped" 200 "$(scrape "$AD/m1")"
expect_eq "... sluice_proxy_quiet_total counts the two quiet refusals" 2 "$(mval "$AD/m1" sluice_proxy_quiet_total)"
expect_eq "... no request series counts them" "" "$(grep '^sluice_proxy_requests_total.*reason="quiet"' "$AD/m1")"
expect_ge "... while other.test's refusal is counted (the control)" 1 \
	"$(mval "$AD/m1" 'sluice_proxy_requests_total{kind="http",decision="refuse",reason="not-granted"}')"
out=$(sl log --refused 2>&1)
printf '%s\n' "$out" | sed 's/^/# log --refused: /'
expect_re "log --refused lists other.test" 'other\.test' "$out"
expect_not_re "... and not the quiet host" 'statsig' "$out"
out=$(sl log --refused --all 2>&1)
expect_re "log --refused --all shows the quiet host too" 'statsig\.anthropic\.com' "$out"
out=$(sl log --by-host --json 2>&1)
expect_eq "log --by-host counts no refusal for the quiet host" 0 \
	"$(printf '%s\n' "$out" | "$PY" -c 'import json,sys; print(sum(g.get("refused",0) for g in map(json.loads, sys.stdin) if "statsig" in json.dumps(g)))' 2>&1)"
# a client of no run (no principal of a claude run): the quiet line is the run's, not everyone's
expect_eq "a client of no run asking the quiet host: refused" 403 "$(pcode http://statsig.anthropic.com/no-run)"
expect_eq "... an ordinary refusal, with its id" 1 "$(logq path=/no-run reason=not-granted 'refusal!=null')"

# --- sluice watch in tmux (its own socket): other.test's row marked '!', the quiet host's not
TM=sluice-quiet-$$
tmx() { tmux -L "$TM" "$@"; }
trap 'rc=$?; tmux -L "$TM" kill-server 2>/dev/null; (exit $rc); lab_teardown' EXIT
cat >"$AD/watch.sh" <<EOF2
#!/bin/bash
exec ip netns exec "$HNS" "$SLUICE_BUILD/sluice" -c "$CONF" watch
EOF2
chmod +x "$AD/watch.sh"
tmx new-session -d -s w -x 200 -y 40 "$AD/watch.sh"
cap() { tmx capture-pane -p -t w; }
if wait_until 10 bash -c "tmux -L $TM capture-pane -p -t w | grep -q /o-e"; then ok "sluice watch shows the rows"; else
	not_ok "sluice watch shows the rows" "$(cap)"; fi
expect_re "... other.test's refusal marked '!'" '^!' "$(cap | grep /o-e)"
expect_re "... the quiet host's row shown" 'rgstr-e' "$(cap)"
expect_re "... not marked as a refusal" '^ ' "$(cap | grep rgstr-e)"
tmx kill-server 2>/dev/null

# --- a learn window: other.test observed, the quiet host still refused, and not offered
out=$(sl allow enforce learn --for 5m 2>&1) || not_ok "allow enforce learn" "$out"
wait_until 5 bash -c "grep -q '^mode learn' '$STATE/grants'"
sleep 1.5 # the proxy reads the store's mode within a second
tries l
expect_eq "in a learn window other.test is let through (observed)" 1 \
	"$(logq path=/o-l decision=observe reason=not-granted)"
expect_eq "... the quiet host is refused still" 403 "$(cat "$AD/l.quiet")"
expect_eq "... its row: reason quiet" 1 "$(logq path=/v1/rgstr-l decision=refuse reason=quiet)"
out=$(sl allow enforce on 2>&1) || not_ok "allow enforce on" "$out"
out=$(sl allow learn </dev/null 2>&1)
printf '%s\n' "$out" | sed 's/^/# learn: /'
expect_re "allow learn offers other.test" 'allow add other\.test' "$out"
expect_not_re "... and not the quiet host" 'statsig' "$out"

# --- a flood of quiet tries past the row budget, then one real refusal
c="curl -s -o /dev/null --max-time 10"
ANTHROPIC_API_KEY=sk-ant-quiet-$$ timeout -k 5 60 "${SRUN[@]}" --agent claude -- sh -c "
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do $c http://statsig.anthropic.com/flood-\$i; done
	$c -w '%{http_code}' http://other.test/o-after-flood >$AD/f.other; true" >"$AD/f.out" 2>&1
expect_eq "after 12 quiet tries, the run's real refusal: 403" 403 "$(cat "$AD/f.other")"
expect_eq "... and its row is written (the quiet tries spent a budget of their own)" 1 \
	"$(logq path=/o-after-flood reason=not-granted 'refusal!=null')"
if wait_log 5 kind=suppressed; then ok "the quiet rows past the budget: a suppression row"; else
	not_ok "the quiet rows past the budget: a suppression row" "$(tail -3 "$NETLOG")"; fi
expect_re "... it counts only quiet rows" '^\{"quiet": [0-9]+\}$' "$(logq kind=suppressed --field reasons)"
out=$(sl log --refused 2>&1)
printf '%s\n' "$out" | sed 's/^/# log --refused: /'
expect_not_re "log --refused leaves the quiet suppression row out" 'suppressed|quiet' "$out"
expect_re "... --all shows it" ' - +[0-9]+ .* suppressed ' "$(sl log --refused --all 2>&1)"

lab_done
