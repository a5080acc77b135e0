#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# The build gate: `sluice build-token new --name NAME` prints a proxy URL
# with a fresh secret (only its hash is stored); a real `podman build`
# whose RUN wget goes through the proxy with that URL (a build arg) is
# principal build:NAME and is served by a grant --for build:NAME, while a
# container through the forwarder is refused the same host. An unknown or
# expired secret gets a 407 that says how to mint one; `build:*` serves any
# build.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_start_stamped_proxy "listen $SBX_PROXY"
lab_sandbox_forward

c1=gate-a-$$
sbx_ctr "$c1" --network bridge -- sleep 300 >/dev/null || lab_bail "podman run $c1"
CTX=$LAB_DIR/ctx
mkdir -p "$CTX"
cat >"$CTX/Containerfile" <<'CF'
FROM localhost/sluice-lab
ARG http_proxy
ARG WHAT
RUN wget -q -O /tmp/got "http://$WHAT" && cat /tmp/got
CF
IMAGES=()
# pbuild URL WHAT: podman build in the vm, its RUN through URL; prints the build's output, then rc=N
pbuild() {
	local tag=localhost/sluice-gate-$$-${#IMAGES[@]}
	IMAGES+=("$tag")
	timeout 120 nsenter --net="/run/netns/$VNS" podman --runtime runc build --network host \
		-v /usr:/usr:ro --no-cache --build-arg "http_proxy=$1" --build-arg "WHAT=$2" \
		-t "$tag" -f "$CTX/Containerfile" "$CTX" 2>&1
	echo "rc=$?"
}
gate_cleanup() {
	local i
	for i in "${IMAGES[@]}"; do podman rmi -f "$i" >/dev/null 2>&1; done
}
trap 'rc=$?; gate_cleanup; (exit $rc); lab_teardown' EXIT

url=$(sl build-token new --name img --proxy "$SBX_PROXY" 2>"$LAB_DIR/mint.err")
expect_re "build-token new prints a proxy URL with a fresh secret" \
	"^http://sluice-build:[0-9a-f]{64}@$SBX_PROXY\$" "$url"
secret=${url#http://sluice-build:}
secret=${secret%@*}
expect_re "... and says how to grant the build" "sluice allow add HOST --for build:img" "$(cat "$LAB_DIR/mint.err")"
expect_eq "... only its hash is stored" "0 1" \
	"$(grep -c "$secret" "$STATE/build-tokens") $(grep -c "^img [0-9a-f]\{64\} " "$STATE/build-tokens")"
expect_eq "a second token gets another secret" 0 \
	"$(sl build-token new --name img --proxy "$SBX_PROXY" 2>/dev/null | grep -c "$secret")"
sl allow add good.test --for build:img >/dev/null || not_ok "sluice allow add good.test --for build:img"
warm() { [ "$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$url" http://good.test/warm)" = 200 ]; }
wait_until 3 warm || not_ok "the proxy knows the token and the grant within 3 s"

# the build
out=$(pbuild "$url" good.test/build-1)
printf '%s\n' "$out" | tail -4 | sed 's/^/# build: /'
expect_re "podman build: RUN wget through the build's URL is served (the build succeeds)" \
	"hello from 203\\.0\\.113\\.10:80.*rc=0\$" "$(printf '%s' "$out" | tr '\n' ' ')"
expect_eq "... the origin saw it" 1 "$(inetq ev=req 'line~/build-1 ' --count)"
expect_eq "... its row: build:img, allowed by the build's grant" \
	"build:img build:img allow good.test (permanent, for build:img)" \
	"$(logq path=/build-1 --field who) $(logq path=/build-1 --field build) $(logq path=/build-1 --field decision) $(logq path=/build-1 --field grant)"
expect_eq "... and no credential went on to the origin" 0 "$(grep -c "$secret" "$LAB_DIR/inet.jsonl")"
expect_re "sluice log --who build:img names the build's rows" "/build-1" "$(sl log --who build:img)"

# a container is not the build
code=$(sbx_exec "$c1" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_FWD" \
	http://good.test/ctr-1 2>&1)
expect_eq "a container through the forwarder is refused the build's host" 403 "$code"
expect_none "... its request never reached the origin" inet 'line~/ctr-1 '

# an unknown secret, then an expired one: 407, saying how to mint one
bad=${url/$secret/$(printf '%s' "$secret" | tr '0-9a-f' '1-9a-f0')}
out=$(pbuild "$bad" good.test/build-bad)
expect_re "a build with an unknown secret fails" "rc=[1-9][0-9]*\$" "$out"
expect_eq "... its row: refused 407 build-token" "refuse build-token 407" \
	"$(logq reason=build-token --field decision | tail -1) $(logq reason=build-token --field reason | tail -1) $(logq reason=build-token --field status | tail -1)"
expect_none "... it never reached the origin" inet 'line~/build-bad '
resp=$(vx curl -si --max-time 10 -x "$bad" http://good.test/curl-bad 2>&1)
expect_re "... curl sees 407 with Proxy-Authenticate" \
	"^HTTP/1.1 407 Proxy Authentication Required" "$resp"
expect_re "... and a body that says how to mint one" \
	"sluice: this build token is unknown; mint one on the host with: sluice build-token new --name NAME" "$resp"
expect_eq "... Proxy-Authenticate names the realm" 'Basic realm="sluice-build"' "$(header_of "$resp" Proxy-Authenticate)"
short=$(sl build-token new --name img --ttl 1s --proxy "$SBX_PROXY" 2>/dev/null)
sleep 2.2
resp=$(vx curl -si --max-time 10 -x "$short" http://good.test/curl-expired 2>&1)
expect_re "an expired secret: 407, said" "sluice: this build token is expired" "$resp"
expect_none "... it never reached the origin" inet 'line~/curl-expired '
resp=$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$url" http://good.test/curl-ok 2>&1)
expect_eq "the live token through curl: 200 (the control)" 200 "$resp"
resp=$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -U other:pw -x "http://$SBX_PROXY" \
	http://good.test/curl-other 2>&1)
expect_eq "another user's Proxy-Authorization is not a build token: unattributed, refused 403" 403 "$resp"

# build:* serves any build; a named grant only its build
sl allow add other.test --for 'build:*' >/dev/null || not_ok "sluice allow add other.test --for build:*"
url2=$(sl build-token new --name docs --proxy "$SBX_PROXY" 2>/dev/null)
# the proxy reads the token file within a second
known() { [ "$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$1" http://other.test/known)" != 407 ]; }
wait_until 3 known "$url2" || not_ok "the proxy knows the new token within 3 s"
out=$(pbuild "$url2" other.test/build-any)
expect_re "build:* serves build:docs" "rc=0\$" "$out"
expect_eq "... its row names the scope" "other.test (permanent, for build:*)" "$(logq path=/build-any --field grant)"
out=$(pbuild "$url2" good.test/build-docs)
expect_re "... but good.test --for build:img does not serve build:docs" "rc=[1-9][0-9]*\$" "$out"
expect_eq "... refused, not-granted" "refuse not-granted" \
	"$(logq path=/build-docs --field decision) $(logq path=/build-docs --field reason)"

# list and rm
expect_re "build-token list shows the live tokens" "^build:docs " "$(sl build-token list)"
expect_eq "build-token rm docs" "removed 1 token of build:docs" "$(sl build-token rm docs)"
resp=$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$url2" http://other.test/after-rm 2>&1)
code_is407() { [ "$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$url2" http://other.test/after-rm2)" = 407 ]; }
if wait_until 3 code_is407; then ok "a removed token gets 407 within 3 s"; else not_ok "a removed token gets 407 within 3 s" "$resp"; fi
expect_eq "a bad name is a usage error" 2 "$(sl build-token new --name 'a b' >/dev/null 2>&1; echo $?)"
expect_eq "--ttl past a day is a usage error" 2 "$(sl build-token new --ttl 2d >/dev/null 2>&1; echo $?)"

lab_ctrs_remove
lab_done
