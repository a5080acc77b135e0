#!/bin/bash
# test_project_limit.sh: a `sluice run` project's connection cap is the
# project's (issue 28, item 1). Its runs' forwarders stamp as=project:NAME
# from each run's own network sluice-ID; the proxy counts those
# connections against max-connections-per-client once for the project, all
# its concurrent runs together, while another project, and a stamp without
# as=, are counted apart. The real proxy; stamps signed with the lab's key
# as sluice-forward signs them; CONNECT tunnels that stay busy (not idle).
source "$(dirname "$0")/lab.sh"
lab_up
CONNECT_HEAD='CONNECT good.test:80 HTTP/1.1\r\nHost: good.test:80\r\n\r\n'
hold() { hx "$PY" "$INTEG_DIR/hold.py" "$@"; }
held() { wait_until 20 grep -q '^holding' "$1"; }
statuses() { awk '/^[0-9]/{printf "%s%s", s, $2; s=" "}' "$1"; }
lab_start_stamped_proxy "max-connections 64" "max-connections-per-client 3" "head-timeout 30" \
	"allow good.test" "allow good.test:80"
K=$STATE/stamp.key

# run A of project eps: two tunnels
hold --until "$LAB_DIR/release" --max 40 --stamp "$K" 127.0.0.1 sluice-aaaaaaaaaaaa 00000000000000a1 1 \
	project:eps 2 "$CONNECT_HEAD" >"$LAB_DIR/a.out" 2>&1 &
HOLDS=($!)
LAB_PIDS+=($!)
held "$LAB_DIR/a.out" || not_ok "run A's connections held" "$(cat "$LAB_DIR/a.out")"
expect_eq "run A of project eps: 2 tunnels" "200 200" "$(statuses "$LAB_DIR/a.out")"
# run B of eps, at the same time, on its own network
hold --until "$LAB_DIR/release" --max 40 --stamp "$K" 127.0.0.1 sluice-bbbbbbbbbbbb 00000000000000b1 1 \
	project:eps 2 "$CONNECT_HEAD" >"$LAB_DIR/b.out" 2>&1 &
HOLDS+=($!)
LAB_PIDS+=($!)
held "$LAB_DIR/b.out" || not_ok "run B's connections held" "$(cat "$LAB_DIR/b.out")"
expect_eq "run B of eps: its first is the project's third, its second over the cap (503)" "200 503" \
	"$(statuses "$LAB_DIR/b.out")"
wait_log 5 reason=client-limit
expect_re "... the refusal names the project and that its runs count together" \
	"as project:eps holds too many connections.*max-connections-per-client 3, the project's runs together" \
	"$(logq reason=client-limit --field detail)"
expect_eq "... on run B's network" "127.0.0.1@sluice-bbbbbbbbbbbb" "$(logq reason=client-limit --field who)"
# another project, and a stamp with no as=, from a third network: counted apart
hold --until "$LAB_DIR/release" --max 40 --stamp "$K" 127.0.0.1 sluice-cccccccccccc 00000000000000c1 1 \
	project:zeta 3 "$CONNECT_HEAD" >"$LAB_DIR/c.out" 2>&1 &
HOLDS+=($!)
LAB_PIDS+=($!)
held "$LAB_DIR/c.out" || not_ok "project zeta's connections held" "$(cat "$LAB_DIR/c.out")"
expect_eq "project zeta, at the same time: its own 3" "200 200 200" "$(statuses "$LAB_DIR/c.out")"
hold --until "$LAB_DIR/release" --max 40 --stamp "$K" 127.0.0.1 sluice-dddddddddddd 00000000000000d1 1 \
	- 3 "$CONNECT_HEAD" >"$LAB_DIR/d.out" 2>&1 &
HOLDS+=($!)
LAB_PIDS+=($!)
held "$LAB_DIR/d.out" || not_ok "the unnamed principal's connections held" "$(cat "$LAB_DIR/d.out")"
expect_eq "a stamp without as= (127.0.0.1@sluice-dddddddddddd): its own 3" "200 200 200" \
	"$(statuses "$LAB_DIR/d.out")"
touch "$LAB_DIR/release"
wait "${HOLDS[@]}"
lab_done
