#!/bin/bash
# A passthrough tunnel's ClientHello under a --max-up: it is read whole
# before anything goes up (hello.c), and it is charged as it is read, so a
# hello bigger than what the budget has left is refused (budget) before a
# byte of it goes; ten tunnels opened at once under one 1 KiB budget, each
# with a 4000-byte ClientHello, get nothing to the origin between them. A
# hello within the budget still goes, and with it what the client sends after.
source "$(dirname "$0")/lab.sh"
lab_up
lab_write_conf "intercept on" "passthrough good.test"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
# origin lens: what halfclose2 (:9002) recorded of each tunnel, summed, and how many
got() { "$PY" -c 'import json,sys; d=[len(json.loads(l)["data"]) for l in open(sys.argv[1]) if "\"halfclose2\"" in l]; print(sum(d), len(d))' "$LAB_DIR/halfclose2.jsonl"; }
tunnels() { hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9002 "$@" hello 2>&1 | sed 's/^/# tun: /'; }

# the control: with no budget, ten such hellos all reach the origin
n=$(reloads)
sl allow add good.test:9002 >/dev/null || not_ok "allow add good.test:9002"
wait_until 10 reloaded_past "$n" || not_ok "the proxy reloaded the grant"
tunnels 10 4000
wait_until 5 bash -c "[ \"\$(grep -c '\"halfclose2\"' '$LAB_DIR/halfclose2.jsonl')\" -ge 10 ]"
expect_eq "without a budget, ten passthrough tunnels' 4000-byte ClientHellos reach the origin (it is up and recording)" \
	"40000 10" "$(got)"

# a budgeted grant for the same host:port is the one that serves (it wins over the unbudgeted)
n=$(reloads)
sl allow add good.test:9002 --max-up 1k >/dev/null || not_ok "allow add good.test:9002 --max-up 1k"
wait_until 10 reloaded_past "$n" || not_ok "the proxy reloaded the grant"
: >"$LAB_DIR/halfclose2.jsonl"
tunnels 10 4000
wait_log 5 port=9002 reason=budget
sleep 1
expect_eq "ten at once under --max-up 1k, each a 4000-byte ClientHello: nothing of them reached the origin" \
	"0 0" "$(got)"
expect_eq "... each was refused, its row reason budget" 10 "$(logq port=9002 reason=budget)"
expect_re "... its detail names the budget" 'max-up 1024 bytes for unattributed is spent' \
	"$(logq port=9002 reason=budget --json | head -1)"

# within the budget: the grant re-added (a new added time: its counts start again), a 600-byte hello
sleep 1.1
n=$(reloads)
sl allow add good.test:9002 --max-up 1k >/dev/null
wait_until 10 reloaded_past "$n" || not_ok "the proxy reloaded the grant"
: >"$LAB_DIR/halfclose2.jsonl"
tunnels 1 600
wait_until 5 bash -c "grep -q '\"halfclose2\"' '$LAB_DIR/halfclose2.jsonl'"
expect_eq "a 600-byte ClientHello under a fresh --max-up 1k reaches the origin whole" "600 1" "$(got)"
lab_done
