#!/bin/bash
# A request re-sent on a fresh connection after its kept-alive upstream
# dropped it (the replay) dials from the address in use on through the
# rest of the checked answer set: the kept upstream keeps the whole answer
# set, not only the address it is connected to. multi.test resolves to a public-looking
# address (first) and a private one (second) that an allow-private
# exception covers; first serves one request, stops listening and drops the
# next one unanswered; the replay finds first refusing and goes to second.
# With only first's address kept the client would get 502 connect-failed.
source "$(dirname "$0")/lab.sh"
lab_up
lab_multi_origin

lab_start_proxy "allow multi.test:8181" "allow-private multi.test 10.20.0.0/16"

# one client connection, two bodiless GETs
hx timeout 30 "$PY" "$INTEG_DIR/keepalive2.py" multi.test:8181 >"$LAB_DIR/client.out" 2>&1
expect_re "the first request is served by the first address" '^one: HTTP/1.1 200 .* first$' "$(grep '^one:' "$LAB_DIR/client.out")"
expect_eq "the first origin dropped the second request unanswered" 1 "$(recq ev=req-dropped origin=first 'line~/two')"
expect_re "the replay went on to the second address of the answer set" '^two: HTTP/1.1 200 .* second$' "$(grep '^two:' "$LAB_DIR/client.out")"
expect_eq "the second origin got the re-sent request" 1 "$(recq ev=req origin=second 'line~/two')"
expect_eq "the second request's row names the address it went to" "10.20.0.5:8181" \
	"$(jq_ "$NETLOG" 'path~/two' --field dialed)"
lab_done
