#!/bin/bash
# sluice watch, the live view of the network log, driven in tmux against the
# real proxy: a refused request (403) appears at the bottom, highlighted; o
# on it asks first (a confirmation naming its host, port, level and scope),
# y stores a once grant (STATE/grants) and says so on the status line;
# the retried request passes (the origin saw it) and its row shows as
# allowed; keys on an allowed row grant nothing and say why; P on a stamped
# refusal stores a permanent grant for SRC@NET (the stamped retry passes,
# an unstamped one is still refused), P on an unattributed refusal grants
# nothing; who asked is named from STATE/engine.jsonl, read again when it
# changes; / filters (Enter applies, Esc cancels, empty clears); a resize
# redraws; the grant keys act on the row under the cursor: refusals A (a
# host longer than the table's column) then B, the cursor moved to A, o: the
# confirmation names A's full host and refusal id, a row arriving meanwhile
# changes nothing, y stores A's grant (A is served, B still refused), a key
# other than y cancels; q and SIGTERM leave the terminal as it was (the alternate screen
# left, canonical mode and echo back); without a terminal it exits 2.
# tmux runs on its own socket (-L), killed in the teardown.
source "$(dirname "$0")/lab.sh"
command -v tmux >/dev/null || lab_bail "tmux is installed (deps/debian-packages)"
LONG=a-host-name-longer-than-the-column-for-the-cursor.test # A: > 27 characters
LAB_HOSTS+="203.0.113.11 $LONG
"
lab_up
TM=sluice-watch-$$
tmx() { tmux -L "$TM" "$@"; }
trap 'rc=$?; tmux -L "$TM" kill-server 2>/dev/null; (exit $rc); lab_teardown' EXIT
lab_start_stamped_proxy "allow good.test"
ESC=$'\e'

# --- without a terminal
out=$(sl watch </dev/null 2>&1)
rc=$?
expect_eq "without a terminal: exit 2" 2 "$rc"
expect_re "... saying why and pointing to sluice log -f" "needs a terminal.*sluice log -f" "$out"
out=$(sl watch 2>&1 </dev/null | cat)
expect_re "... stdout a pipe too" "needs a terminal" "$out"

expect_eq "a granted request before the watch starts" 200 "$(pcode http://good.test/w-before)"
wait_log 5 path=/w-before || lab_bail "the proxy logs /w-before"

# pane.sh NAME: the watch in the host namespace (its pid in NAME.pid), then how it
# ended and the terminal's modes after it, then a bounded wait to be read
pane() {
	cat >"$LAB_DIR/$1.sh" <<EOF
#!/bin/bash
bash -c 'echo \$\$ >"$LAB_DIR/$1.pid"; exec ip netns exec "$HNS" "$SLUICE_BUILD/sluice" -c "$CONF" watch'
echo "watch exited \$?"
echo "modes: \$(stty -a | tr ' ;' '\n\n' | grep -Ex -- '-?(icanon|echo)' | tr '\n' ' ')"
sleep 300
EOF
	chmod +x "$LAB_DIR/$1.sh"
	tmx new-session -d -s "$1" -x 180 -y 40 "$LAB_DIR/$1.sh"
}
cap() { tmx capture-pane -p -t "$1"; }
cape() { tmx capture-pane -p -e -t "$1"; }
has() { cap "$1" | grep -Eq -- "$2"; }
line() { cap "$1" | sed -n "$2p"; }
# rowe NAME RE: the escape-coded screen line holding RE
rowe() { cape "$1" | grep -E -- "$2" | head -1; }
grants() { grep -v '^#' "$STATE/grants" 2>/dev/null; }
# the proxy reads STATE/grants again within a second of a change, and says so

pane w
if wait_until 5 has w '/w-before'; then ok "the watch starts and shows the rows already logged"; else
	not_ok "the watch starts and shows the rows already logged" "$(cap w)"; fi
expect_eq "... on the alternate screen" 1 "$(tmx display -p -t w '#{alternate_on}')"
expect_re "... its column header" "TIME +WHO +KIND +METHOD +HOST:PORT +PATH +STATUS +DECISION +REASON" \
	"$(line w 2)"
expect_re "... the keys on the last line" "^q quit .*o once.*P permanent for who asked.*/ filter" \
	"$(line w 40)"

# --- a refusal at the bottom, highlighted; o grants it once
expect_eq "a request to a host with no grant: 403" 403 "$(pcode http://other.test/w-refused)"
wait_until 5 has w '/w-refused'
expect_re "its row appears at the bottom (line 38, above the status and keys)" \
	'^! .*unattributed +http +GET +other\.test:80 +/w-refused +403 +refuse +not-granted' \
	"$(line w 38)"
e=$(rowe w '/w-refused')
expect_re "... highlighted: red" "$ESC\\[([0-9;]*;)?31m" "$e"
expect_re "... and selected (reverse video): the selection is on the newest row" \
	"$ESC\\[([0-9;]*;)?7m" "$e"
expect_not_re "the allowed row is not red" "$ESC\\[([0-9;]*;)?31m" "$(rowe w '/w-before')"
expect_eq "no grant of other.test yet" "" "$(grants | grep '^other\.test ')"
r0=$(reloads)
tmx send-keys -t w o
if wait_until 5 has w 'o: grant other\.test:80 once, for 15 minutes, to every connection \(refusal [0-9a-f]+\)\? y stores it'; then
	ok "o: a confirmation names the host, port, level and scope"; else
	not_ok "o: a confirmation names the host, port, level and scope" "$(cap w | tail -3)"; fi
expect_eq "... and nothing is stored before y" "" "$(grants | grep '^other\.test ')"
tmx send-keys -t w y
if wait_until 5 has w 'added other\.test once'; then ok "o, y: the status line says the once grant was added"; else
	not_ok "o: the status line says the once grant was added" "$(line w 39)"; fi
expect_re "... the status line names its expiry" "added other\\.test once, expires in 15" "$(line w 39)"
expect_re "... STATE/grants holds other.test once, for every connection" \
	'^other\.test once [0-9]+ [0-9]+$' "$(grants | grep '^other\.test ')"
wait_until 5 reloaded_past "$r0" || not_ok "the proxy reloads the grants" "$(tail -3 "$LAB_DIR/proxy.err")"
expect_eq "the retried request passes" 200 "$(pcode http://other.test/w-retry)"
expect_eq "... the origin saw it" 1 "$(inetq ev=req 'line~/w-retry ' --count)"
expect_none "... and never saw the refused one" inet 'line~/w-refused '
wait_until 5 has w '/w-retry'
expect_re "its row, at the bottom: allowed, granted" \
	'^  .*http +GET +other\.test:80 +/w-retry +200 +allow +granted' "$(line w 38)"
e=$(rowe w '/w-retry')
expect_not_re "... not red" "$ESC\\[([0-9;]*;)?31m" "$e"
expect_re "... selected: the selection followed the new row" "$ESC\\[([0-9;]*;)?7m" "$e"
expect_not_re "... and the refusal above it is no longer selected" "$ESC\\[([0-9;]*;)?7m" \
	"$(rowe w '/w-refused')"

# --- keys on a row a grant does not change
before=$(grants | md5sum)
tmx send-keys -t w p
if wait_until 5 has w 'this row was allowed'; then ok "p on an allowed row: the status line says why nothing is granted"; else
	not_ok "p on an allowed row: the status line says why nothing is granted" "$(line w 39)"; fi
expect_eq "... and STATE/grants is unchanged" "$before" "$(grants | md5sum)"

# --- P: permanent for the principal that asked
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.8 podman 00112233445566b1 1)
out=$(raw 'GET http://third.test/w-stamped HTTP/1.1\r\nHost: third.test\r\nSluice-Stamp: '"$st"'\r\n\r\n' --timeout 5)
expect_eq "a stamped request (10.88.0.8@podman) to third.test: 403" 403 "$(meta_status "$out")"
wait_until 5 has w '/w-stamped'
expect_re "its row at the bottom names who asked" \
	'^! .*10\.88\.0\.8@podman +http +GET +third\.test:80 +/w-stamped +403 +refuse +not-granted' \
	"$(line w 38)"
# the engine names that address: the view reads STATE/engine.jsonl again
printf '{"t":"2026-01-01T00:00:00.000Z","net":"podman","containers":[{"id":"%s","name":"web-w","project":null,"netmode":"bridge","addrs":["10.88.0.8"]}]}\n' \
	"$(printf 'ab%.0s' $(seq 32))" >"$STATE/engine.jsonl"
if wait_until 5 has w '^! .* web-w +http +GET +third\.test:80 +/w-stamped'; then
	ok "a new engine snapshot names the row's container (web-w), read again while watching"; else
	not_ok "a new engine snapshot names the row's container (web-w), read again while watching" "$(line w 38)"; fi
r0=$(reloads)
tmx send-keys -t w P
if wait_until 5 has w 'P: grant third\.test:80 permanently, only to 10\.88\.0\.8@podman'; then
	ok "P: the confirmation names the principal it is scoped to"; else
	not_ok "P: the confirmation names the principal it is scoped to" "$(cap w | tail -3)"; fi
tmx send-keys -t w y
if wait_until 5 has w 'added third\.test for 10\.88\.0\.8@podman permanent'; then
	ok "P: the status line says a permanent grant for 10.88.0.8@podman was added"; else
	not_ok "P: the status line says a permanent grant for 10.88.0.8@podman was added" "$(line w 39)"; fi
expect_re "... STATE/grants holds it for=SRC@NET" '^third\.test permanent [0-9]+ for=10\.88\.0\.8@podman$' \
	"$(grants | grep '^third\.test ')"
wait_until 5 reloaded_past "$r0" || not_ok "the proxy reloads the grants" "$(tail -3 "$LAB_DIR/proxy.err")"
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.8 podman 00112233445566b1 2)
out=$(raw 'GET http://third.test/w-stamped2 HTTP/1.1\r\nHost: third.test\r\nSluice-Stamp: '"$st"'\r\n\r\n' --timeout 5)
expect_eq "the stamped retry passes" 200 "$(meta_status "$out")"
expect_eq "... the origin saw it" 1 "$(inetq ev=req 'line~/w-stamped2 ' --count)"
expect_eq "an unstamped request to third.test is still refused (the grant is scoped)" 403 \
	"$(pcode http://third.test/w-unattr)"
wait_until 5 has w '/w-unattr'
expect_re "... its row at the bottom, unattributed" \
	'^! .*unattributed +http +GET +third\.test:80 +/w-unattr +403 +refuse +not-granted' "$(line w 38)"
before=$(grants | md5sum)
tmx send-keys -t w P
if wait_until 5 has w 'unattributed \(no stamp\), so a grant cannot be scoped'; then
	ok "P on an unattributed refusal: the status line says it cannot be scoped"; else
	not_ok "P on an unattributed refusal: the status line says it cannot be scoped" "$(line w 39)"; fi
expect_eq "... and nothing is granted" "$before" "$(grants | md5sum)"
expect_eq "... third.test still refused without a stamp" 403 "$(pcode http://third.test/w-unattr2)"

# --- moving the selection
wait_until 5 has w '/w-unattr2'
tmx send-keys -t w k k
if wait_until 3 test -n "$(rowe w '/w-stamped2' | grep -E "$ESC\\[([0-9;]*;)?7m")"; then
	ok "k k: the selection moved up two rows"; else not_ok "k k: the selection moved up two rows" "$(cape w | tail -6)"; fi
pcode http://good.test/w-later >/dev/null
wait_until 5 has w '/w-later'
expect_re "... a new row does not take it away" "$ESC\\[([0-9;]*;)?7m" "$(rowe w '/w-stamped2')"
tmx send-keys -t w Down Down Down
if wait_until 3 test -n "$(rowe w '/w-later' | grep -E "$ESC\\[([0-9;]*;)?7m")"; then
	ok "Down to the newest row selects it"; else not_ok "Down to the newest row selects it" "$(cape w | tail -6)"; fi

# --- / filters
tmx send-keys -t w / w-st
wait_until 3 has w '^filter: w-st_'
expect_re "/ shows the filter being typed" '^filter: w-st_' "$(line w 40)"
tmx send-keys -t w Enter
if wait_until 3 has w '2 rows matching "w-st"'; then ok "Enter applies it: 2 rows match"; else
	not_ok "Enter applies it: 2 rows match" "$(line w 1)"; fi
expect_eq "... and only those are shown" "2 0" \
	"$(cap w | grep -c '/w-stamped') $(cap w | grep -Ec '/w-(before|refused|retry|unattr|later)')"
tmx send-keys -t w / zzz
wait_until 3 has w '^filter: zzz_'
sleep 0.2
tmx send-keys -t w Escape
if wait_until 3 has w 'filter unchanged'; then ok "Esc cancels a filter being typed"; else
	not_ok "Esc cancels a filter being typed" "$(line w 39)"; fi
expect_re "... the filter in force stays" '2 rows matching "w-st"' "$(line w 1)"
tmx send-keys -t w / C-u Enter
if wait_until 3 has w 'filter cleared'; then ok "an empty filter clears it"; else
	not_ok "an empty filter clears it" "$(line w 39)"; fi
expect_eq "... every row is shown again" 1 "$(cap w | grep -c '/w-before')"

# --- resize
tmx resize-window -t w -x 120 -y 20
if wait_until 3 has w '^q quit' && [ "$(line w 20 | cut -c1-6)" = "q quit" ]; then
	ok "a resize to 120x20 redraws: the keys on line 20"; else not_ok "a resize to 120x20 redraws" "$(cap w)"; fi
expect_re "... the newest row on line 18" '/w-later' "$(line w 18)"

# --- the grant keys act on the row under the cursor, and ask first
tmx resize-window -t w -x 180 -y 40
expect_eq "A: a request to $LONG: 403" 403 "$(pcode "http://$LONG/w-curA")"
wait_log 5 path=/w-curA || lab_bail "the proxy logs /w-curA"
expect_eq "B: a request to b-cursor.test: 403" 403 "$(pcode http://b-cursor.test/w-curB)"
if wait_until 5 has w '/w-curB'; then ok "A and B are shown, B the newest"; else
	not_ok "A and B are shown, B the newest" "$(cap w | tail -6)"; fi
expect_re "... A's host is cut in the table, with its marker" "${LONG:0:20}[-a-z.]*\.\.\. +/w-curA" \
	"$(cap w | grep /w-curA)"
tmx send-keys -t w k
if wait_until 3 test -n "$(rowe w '/w-curA' | grep -E "$ESC\\[([0-9;]*;)?7m")"; then
	ok "k: the cursor is on A"; else not_ok "k: the cursor is on A" "$(cape w | tail -6)"; fi
idA=$(logq path=/w-curA --field refusal)
expect_re "A's row has a refusal id" '^[0-9a-f]{12,16}$' "$idA"
before=$(grants | md5sum)
tmx send-keys -t w o
if wait_until 5 has w "o: grant $LONG:80 once"; then
	ok "o: the confirmation shows A's full host ($LONG, ${#LONG} characters)"; else
	not_ok "o: the confirmation shows A's full host" "$(cap w | tail -4)"; fi
expect_re "... its port, level, scope and refusal id" \
	"o: grant ${LONG//./\\.}:80 once, for 15 minutes, to every connection \\(refusal $idA\\)\\? y stores it, any other key cancels" \
	"$(cap w | tail -3 | tr -d '\n')"
expect_eq "... nothing stored yet" "$before" "$(grants | md5sum)"
expect_eq "C: a refusal arrives while it asks" 403 "$(pcode http://c-cursor.test/w-curC)"
if wait_until 5 has w '/w-curC'; then ok "... its row is shown"; else not_ok "... its row is shown" "$(cap w | tail -6)"; fi
r0=$(reloads)
tmx send-keys -t w y
if wait_until 5 has w "added $LONG once"; then ok "y: A's grant is stored, not the newest row's"; else
	not_ok "y: A's grant is stored, not the newest row's" "$(cap w | tail -3)"; fi
expect_re "... STATE/grants holds A once" "^${LONG//./\\.} once [0-9]+ [0-9]+\$" "$(grants | grep "^$LONG ")"
expect_eq "... and neither B nor C" "" "$(grants | grep -E '^(b|c)-cursor\.test ')"
wait_until 5 reloaded_past "$r0" || not_ok "the proxy reloads the grants" "$(tail -3 "$LAB_DIR/proxy.err")"
expect_eq "a request to A is served" 200 "$(pcode "http://$LONG/w-curA2")"
expect_eq "... the origin saw it" 1 "$(inetq ev=req 'line~/w-curA2 ' --count)"
expect_eq "a request to B is still refused" 403 "$(pcode http://b-cursor.test/w-curB2)"
wait_until 5 has w '/w-curB2'
tmx send-keys -t w G
if wait_until 3 test -n "$(rowe w '/w-curB2' | grep -E "$ESC\\[([0-9;]*;)?7m")"; then
	ok "G: the cursor on B's new refusal"; else not_ok "G: the cursor on B's new refusal" "$(cape w | tail -6)"; fi
before=$(grants | md5sum)
tmx send-keys -t w o
wait_until 5 has w 'o: grant b-cursor\.test:80 once' || not_ok "o on B asks" "$(cap w | tail -3)"
tmx send-keys -t w n
if wait_until 5 has w 'nothing granted \(cancelled\)'; then ok "a key other than y cancels"; else
	not_ok "a key other than y cancels" "$(cap w | tail -3)"; fi
expect_eq "... nothing is stored" "$before" "$(grants | md5sum)"
tmx send-keys -t w k o
if wait_until 5 has w 'this row was allowed'; then
	ok "k o typed at once: o acts on the row k moved to (A's allowed retry), not B's"; else
	not_ok "k o typed at once: o acts on the row k moved to" "$(cap w | tail -3)"; fi
expect_eq "... and asks nothing" 0 "$(cap w | grep -c 'grant b-cursor')"

# --- q: the terminal as it was
wpid=$(cat "$LAB_DIR/w.pid")
tmx send-keys -t w q
if wait_until 5 has w '^watch exited 0$'; then ok "q quits: exit 0"; else not_ok "q quits: exit 0" "$(cap w)"; fi
if wait_until 3 bash -c "! kill -0 $wpid"; then ok "... the watch's process is gone"; else
	not_ok "... the watch's process is gone" "pid $wpid"; fi
expect_eq "... the alternate screen is left" 0 "$(tmx display -p -t w '#{alternate_on}')"
expect_re "... canonical mode and echo are back" '^modes: icanon echo *$' "$(cap w | grep '^modes:')"

# --- SIGTERM: the same
pane t
wait_until 5 has t '/w-before' || not_ok "a second watch starts" "$(cap t)"
expect_eq "a second watch: on the alternate screen" 1 "$(tmx display -p -t t '#{alternate_on}')"
kill -TERM "$(cat "$LAB_DIR/t.pid")"
if wait_until 5 has t '^watch exited 143$'; then ok "SIGTERM ends it (143)"; else
	not_ok "SIGTERM ends it (143)" "$(cap t)"; fi
expect_eq "... the alternate screen is left" 0 "$(tmx display -p -t t '#{alternate_on}')"
expect_re "... canonical mode and echo are back" '^modes: icanon echo *$' "$(cap t | grep '^modes:')"
tmux -L "$TM" kill-server 2>/dev/null
lab_done
