#!/bin/bash
# Grants: deny by default, what a bare/port/wildcard grant covers, canonical
# names, live grants through `sluice allow` (add, rm, once+ttl, session),
# observe mode, host mismatch, a damaged store.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow other.test" "allow *.wild.test" "allow bücher.test" "allow third.test:8080"

get_good() { raw 'GET http://good.test/'"$1"' HTTP/1.1\r\nHost: good.test\r\n\r\n' --timeout 5; }
status_good() { meta_status "$(get_good "$1")"; }
good_is() { [ "$(status_good "$2")" == "$1" ]; }
# tunnel_good: curl -p (CONNECT good.test:80, then plain HTTP inside)
tunnel_good() { pcurl -p http://good.test/tun 2>&1; }
tunnel_ok() { [ "$(tunnel_good)" == "hello from 203.0.113.10:80" ]; }

# --- deny by default, and how the refusal explains itself
out=$(get_good r1)
expect_refusal "GET to an ungranted host refused" "$out" 403 not-granted 'sluice allow add good\.test'
expect_eq "refusal body is one line" 1 "$(body_of "$out" | grep -c .)"
expect_none "ungranted request never reaches the origin" inet 'line~/r1'
expect_lt "refusal is immediate" 1.0 "$(meta_elapsed "$out")"
wait_log 2 host=good.test path=/r1
expect_eq "refusal logged: decision refuse, reason not-granted, status 403" "refuse not-granted 403" \
	"$(logq host=good.test path=/r1 --field decision) $(logq host=good.test path=/r1 --field reason) $(logq host=good.test path=/r1 --field status)"
out=$(raw 'CONNECT good.test:80 HTTP/1.1\r\nHost: good.test:80\r\n\r\n' --timeout 5)
expect_refusal "CONNECT to an ungranted host:port refused" "$out" 403 not-granted 'sluice allow add good\.test:80'
code=$(hx curl -s -o /dev/null -w '%{http_connect}' -m 5 -p -x "$PROXY_URL" http://good.test/tun)
expect_re "curl -p through an ungranted CONNECT fails" '^(000|403)$' "$code"

# --- live grant through the CLI, no restart
sl allow add good.test:80 >"$LAB_DIR/cli.out" 2>&1
expect_eq "sluice allow add good.test:80 succeeds" 0 $?
t0=$(now)
if wait_until 3 tunnel_ok; then
	ok "CONNECT tunnel allowed within 3 s of sluice allow add, no restart ($(elapsed "$t0") s)"
else
	not_ok "CONNECT tunnel allowed within 3 s of sluice allow add, no restart" "$(tunnel_good)"
fi
expect_eq "plain HTTP inside the tunnel reached the origin as origin-form" "GET /tun HTTP/1.1" "$(inetq ev=req 'line~/tun' --field line)"
wait_log 2 kind=tunnel host=good.test port=80
row=$(logq kind=tunnel host=good.test port=80 --json)
expect_re "tunnel row: method CONNECT, decision allow, grant good.test:80, dialed 203.0.113.10:80" \
	'"method": "CONNECT".*"decision": "allow".*"grant": "good\.test:80[^"]*".*"dialed": "203\.0\.113\.10:80"' "$row"
expect_eq "a good.test:80 grant covers plain HTTP to port 80 too" 200 "$(status_good r2)"
expect_re "sluice allow list shows the grant" 'good\.test:80' "$(sl allow list 2>&1)"
sl allow rm good.test:80 >>"$LAB_DIR/cli.out" 2>&1
expect_eq "sluice allow rm good.test:80 succeeds" 0 $?
if wait_until 3 good_is 403 r3; then ok "refused again within 3 s of sluice allow rm"; else not_ok "refused again within 3 s of sluice allow rm" "$(get_good r3)"; fi
expect_not_re "sluice allow list no longer shows it" 'good\.test:80' "$(sl allow list 2>&1)"

# --- once with a ttl
sl allow add good.test --level once --ttl 2 >>"$LAB_DIR/cli.out" 2>&1
t0=$(now)
if wait_until 1.5 good_is 200 once1; then ok "--level once --ttl 2 grant allows at once"; else not_ok "--level once --ttl 2 grant allows at once" "$(get_good once1)"; fi
if wait_until 5 good_is 403 once2; then
	el=$(elapsed "$t0")
	expect_ge "once grant expires after its ttl, not before (${el} s)" 1.5 "$el"
else
	not_ok "once grant expires after its ttl" "$(get_good once2)"
fi

# --- session: lives until the proxy restarts
sl allow add good.test --level session >>"$LAB_DIR/cli.out" 2>&1
if wait_until 3 good_is 200 sess1; then ok "session grant allows"; else not_ok "session grant allows" "$(get_good sess1)"; fi
lab_stop_proxy
lab_run_proxy
expect_eq "session grant is gone after a proxy restart" 403 "$(status_good sess2)"
sl allow rm good.test >>"$LAB_DIR/cli.out" 2>&1

# --- what a bare grant covers
expect_eq "bare grant: plain HTTP to :80 allowed" 200 "$(pcode http://other.test/)"
out=$(pcurl -p http://other.test:443/ 2>&1)
expect_eq "bare grant: CONNECT to :443 allowed" "hello from 203.0.113.11:443" "$out"
out=$(raw 'CONNECT other.test:80 HTTP/1.1\r\nHost: other.test:80\r\n\r\n')
expect_refusal "bare grant does not cover CONNECT to :80" "$out" 403 not-granted 'sluice allow add other\.test:80'
out=$(raw 'GET http://other.test:8080/ HTTP/1.1\r\nHost: other.test:8080\r\n\r\n')
expect_refusal "bare grant does not cover plain HTTP to :8080" "$out" 403 not-granted 'sluice allow add other\.test:8080'
out=$(raw 'CONNECT other.test:8443 HTTP/1.1\r\nHost: other.test:8443\r\n\r\n')
expect_refusal "bare grant does not cover CONNECT to :8443" "$out" 403 not-granted
expect_eq "host:8080 grant: plain HTTP to :8080 allowed" 200 "$(pcode http://third.test:8080/)"
expect_eq "host:8080 grant does not cover :80" 403 "$(pcode http://third.test/)"

# --- wildcards: subdomains only
expect_eq "*.wild.test covers a.wild.test" 200 "$(pcode http://a.wild.test/)"
expect_eq "*.wild.test covers b.a.wild.test" 200 "$(pcode http://b.a.wild.test/)"
expect_eq "*.wild.test does not cover the apex wild.test" 403 "$(pcode http://wild.test/)"
expect_eq "*.wild.test does not cover notwild.test" 403 "$(pcode http://notwild.test/)"

# --- canonical names
out=$(raw 'GET http://OTHER.Test./canon1 HTTP/1.1\r\nHost: OTHER.Test.\r\n\r\n')
expect_eq "upper case and trailing dot match the grant" 200 "$(meta_status "$out")"
out=$(raw 'GET http://other.test:80/canon2 HTTP/1.1\r\nHost: other.test:80\r\n\r\n')
expect_eq "explicit :80 in target and Host is the same host" 200 "$(meta_status "$out")"
expect_eq "IDNA: grant bücher.test covers xn--bcher-kva.test" 200 "$(pcode http://xn--bcher-kva.test/)"
out=$(raw 'GET http://good.test/canon3 HTTP/1.1\r\nHost: good.test\r\n\r\n')
expect_refusal "refusal for a canonicalised name" "$out" 403 not-granted

# --- Host must name the target
out=$(raw 'GET http://other.test/mm1 HTTP/1.1\r\nHost: good.test\r\n\r\n')
expect_refusal "Host naming another host than the target refused" "$out" 403 host-mismatch
out=$(raw 'GET http://a.wild.test/mm2 HTTP/1.1\r\nHost: other.test\r\n\r\n')
expect_refusal "Host naming another granted host still refused" "$out" 403 host-mismatch
out=$(raw 'CONNECT other.test:443 HTTP/1.1\r\nHost: good.test:443\r\n\r\n')
expect_refusal "CONNECT whose Host names another host refused" "$out" 403 host-mismatch
expect_none "host-mismatch requests never reach an origin" inet 'line~/mm'
wait_log 2 path=/mm1
expect_eq "host-mismatch logged with reason host-mismatch" "refuse host-mismatch" "$(logq path=/mm1 --field decision) $(logq path=/mm1 --field reason)"

# --- observe mode: would-be refusals allowed and logged as observe
lab_stop_proxy
lab_start_proxy "mode observe" "allow other.test"
out=$(get_good obs1)
expect_eq "observe mode: ungranted request allowed" 200 "$(meta_status "$out")"
wait_log 2 path=/obs1
expect_eq "observe mode: row has decision observe, reason not-granted" "observe not-granted" \
	"$(logq path=/obs1 --field decision) $(logq path=/obs1 --field reason)"
expect_eq "observe mode: a granted request is still decision allow" allow \
	"$(pcurl -o /dev/null http://other.test/obs2; wait_log 2 path=/obs2; logq path=/obs2 --field decision)"
out=$(raw 'GET http://other.test/obs3 HTTP/1.1\r\nHost: good.test\r\n\r\n')
expect_refusal "observe mode: host mismatch still refused" "$out" 403 host-mismatch
out=$(raw 'GET http://evil10.test/obs4 HTTP/1.1\r\nHost: evil10.test\r\n\r\n')
expect_refusal "observe mode: name resolving to a denied IP still refused" "$out" 403 denied-ip
out=$(raw 'GET http://127.1/obs5 HTTP/1.1\r\nHost: 127.1\r\n\r\n')
expect_refusal "observe mode: denied IP literal still refused" "$out" 403 'denied-ip|own-address'
expect_none "observe mode: the denied origin in inet saw nothing" inet 'line~/obs4'
expect_none "observe mode: the denied origin in the proxy's namespace saw nothing" local 'line~/obs5'

# --- a damaged store: fail closed, loudly
lab_stop_proxy
lab_start_proxy "allow other.test"
sl allow add good.test >>"$LAB_DIR/cli.out" 2>&1
if wait_until 3 good_is 200 dmg1; then ok "store grant allows before damage"; else not_ok "store grant allows before damage" "$(get_good dmg1)"; fi
store=$STATE/grants
if [ -f "$store" ]; then
	cp "$store" "$LAB_DIR/grants.good"
	printf 'this line is not a grant !!!\n' >>"$store"
	if wait_until 3 good_is 403 dmg2; then ok "damaged store: its grants stop applying within 3 s"; else not_ok "damaged store: its grants stop applying within 3 s" "$(get_good dmg2)"; fi
	expect_eq "damaged store: config grants still apply" 200 "$(pcode http://other.test/)"
	expect_re "damaged store: proxy stderr names the file" "$store" "$(cat "$LAB_DIR/proxy.err")"
	expect_eq "damaged store: proxy still running" yes "$(proxy_alive && echo yes || echo no)"
	lab_stop_proxy
	lab_run_proxy
	expect_eq "damaged store at start: proxy serves config grants" 200 "$(pcode http://other.test/)"
	expect_eq "damaged store at start: store grants refused" 403 "$(status_good dmg3)"
	expect_re "damaged store at start: stderr names the file" "$store" "$(cat "$LAB_DIR/proxy.err")"
	cp "$LAB_DIR/grants.good" "$store.tmp" && mv "$store.tmp" "$store"
	if wait_until 3 good_is 200 dmg4; then ok "repaired store applies again without restart"; else not_ok "repaired store applies again without restart" "$(get_good dmg4)"; fi
else
	not_ok "sluice allow add writes STATE/grants" "$(ls "$STATE"; cat "$LAB_DIR/cli.out")"
fi

lab_done
