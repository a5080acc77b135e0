#!/bin/bash
# A kept-alive upstream that the origin closes just as the next request
# arrives: a bodiless GET is re-sent once on a new connection to the same
# checked address (the client sees 200); a POST is not re-sent (502).
source "$(dirname "$0")/lab.sh"
lab_up

# oneshot: answers the first request on a connection, drops the second
lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode oneshot --log "$LAB_DIR/oneshot.jsonl" 0.0.0.0:9005
wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/9005' || lab_bail "oneshot origin did not start"
sleep 0.2
: >"$LAB_DIR/oneshot.jsonl"
oneq() { jq_ "$LAB_DIR/oneshot.jsonl" "$@"; }

lab_start_proxy "allow good.test:9005"

out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" -w ' %{http_code}\n' \
	http://good.test:9005/g1 http://good.test:9005/g2 http://good.test:9005/g3 2>&1)
echo "# gets: $(echo $out)"
expect_eq "three GETs on one client connection, the origin dropping every second request: all 200" \
	"one /g1 200 one /g2 200 one /g3 200" "$(echo $out)"
expect_eq "... the origin dropped /g2 once and answered it on a new connection" "1 1" \
	"$(oneq ev=dropped 'line~/g2') $(oneq ev=req 'line~/g2')"
expect_eq "... each GET has one row, status 200, the address dialed" "200 203.0.113.10:9005" \
	"$(logq path=/g2 --field status) $(logq path=/g2 --field dialed)"
expect_eq "... and no 502 was logged" 0 "$(logq status=502)"

out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" -w ' %{http_code}\n' \
	-d a=1 http://good.test:9005/p1 -d a=2 http://good.test:9005/p2 2>&1)
echo "# posts: $(echo $out)"
expect_re "a POST on the dropped connection is not re-sent: 502 upstream-closed" \
	'^one /p1 200 .*502$' "$(echo $out)"
expect_eq "... the origin saw /p2 exactly once" 1 "$(oneq 'line~/p2')"
expect_eq "... logged as upstream-closed" "502 upstream-closed" \
	"$(logq path=/p2 --field status) $(logq path=/p2 --field reason)"
lab_done
