#!/bin/bash
# Malformed and smuggling-shaped requests: each refused with 400 (or 431),
# explained, and the origin never sees a request line for any of them.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test" "allow good.test:8080"

H='Host: good.test\r\n'
declare -a CASES=(
	"CL and TE together|POST http://good.test/smug1 HTTP/1.1\\r\\n${H}Content-Length: 5\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\n"
	"duplicate Content-Length|POST http://good.test/smug2 HTTP/1.1\\r\\n${H}Content-Length: 5\\r\\nContent-Length: 6\\r\\n\\r\\nhello!"
	"Transfer-Encoding: xchunked|POST http://good.test/smug3 HTTP/1.1\\r\\n${H}Transfer-Encoding: xchunked\\r\\n\\r\\n0\\r\\n\\r\\n"
	"obs-fold header line|GET http://good.test/smug4 HTTP/1.1\\r\\n${H}X-A: a\\r\\n  b\\r\\n\\r\\n"
	"bare LF line ends|GET http://good.test/smug5 HTTP/1.1\\nHost: good.test\\n\\n"
	"space before colon|GET http://good.test/smug6 HTTP/1.1\\r\\n${H}Content-Length : 0\\r\\n\\r\\n"
	"lower-case method|get http://good.test/smug7 HTTP/1.1\\r\\n${H}\\r\\n"
	"HTTP/0.9 request line (GET /path)|GET /smug8\\r\\n"
	"HTTP/0.9 absolute request line|GET http://good.test/smug8b\\r\\n\\r\\n"
	"NUL in a header value|GET http://good.test/smug9 HTTP/1.1\\r\\n${H}X-A: a\\x00b\\r\\n\\r\\n"
	"userinfo in the target|GET http://user:pass@good.test/smug10 HTTP/1.1\\r\\n${H}\\r\\n"
	"two spaces in the request line|GET  http://good.test/smug12 HTTP/1.1\\r\\n${H}\\r\\n"
	"tab as request-line separator|GET\\thttp://good.test/smug13 HTTP/1.1\\r\\n${H}\\r\\n"
	"bare CR in a header value|GET http://good.test/smug14 HTTP/1.1\\r\\n${H}X-A: a\\rb\\r\\n\\r\\n"
	"negative Content-Length|POST http://good.test/smug15 HTTP/1.1\\r\\n${H}Content-Length: -1\\r\\n\\r\\n"
	"Content-Length with a plus sign|POST http://good.test/smug16 HTTP/1.1\\r\\n${H}Content-Length: +5\\r\\n\\r\\nhello"
	"HTTP/1.1 without Host|GET http://good.test/smug17 HTTP/1.1\\r\\nX-A: b\\r\\n\\r\\n"
	"two Host headers|GET http://good.test/smug18 HTTP/1.1\\r\\n${H}${H}\\r\\n"
	"port out of range|GET http://good.test:99999/smug19 HTTP/1.1\\r\\nHost: good.test:99999\\r\\n\\r\\n"
	"port zero|GET http://good.test:0/smug20 HTTP/1.1\\r\\nHost: good.test:0\\r\\n\\r\\n"
	"space in a header name|GET http://good.test/smug21 HTTP/1.1\\r\\n${H}X A: b\\r\\n\\r\\n"
	"Transfer-Encoding: chunked, identity|POST http://good.test/smug22 HTTP/1.1\\r\\n${H}Transfer-Encoding: chunked, identity\\r\\n\\r\\n0\\r\\n\\r\\n"
	"CONNECT with a path|CONNECT good.test:443/smug23 HTTP/1.1\\r\\nHost: good.test:443\\r\\n\\r\\n"
	"CONNECT without a port|CONNECT good.test HTTP/1.1\\r\\nHost: good.test\\r\\n\\r\\n"
	"control character in the target|GET http://good.test/smug25\\x01x HTTP/1.1\\r\\n${H}\\r\\n"
	"Content-Length with trailing garbage|POST http://good.test/smug26 HTTP/1.1\\r\\n${H}Content-Length: 5x\\r\\n\\r\\nhello"
)

acc0=$(inetq ev=accept 'peer!~192.0.2.2:')
for c in "${CASES[@]}"; do
	desc=${c%%|*}
	data=${c#*|}
	out=$(raw "$data" --timeout 3)
	expect_refusal "$desc" "$out" 400 ""
done
out=$(raw "POST http://good.test/smugA HTTP/1.1\\r\\n${H}Content-Length: 5\\r\\nContent-Length: 6\\r\\n\\r\\nhelloGET http://good.test/smugB HTTP/1.1\\r\\n${H}\\r\\n" --responses 2 --timeout 3)
expect_eq "request pipelined after a malformed one is not served" "400" "$(meta_statuses "$out")"
expect_eq "connection closed after the 400" 1 "$(meta_closed "$out")"
expect_none "no malformed request reached the origin (no request line)" inet 'line~smug'
expect_eq "no malformed request opened an upstream connection" "$acc0" "$(inetq ev=accept 'peer!~192.0.2.2:')"
wait_log 2 reason=malformed
expect_eq "malformed requests logged: status 400, decision refuse, reason malformed" "400 refuse" \
	"$(logq reason=malformed --field status) $(logq reason=malformed --field decision)"

# --- too large
big=$("$PY" -c 'print("a" * 100000)')
out=$(raw "GET http://good.test/smug-big HTTP/1.1\\r\\n${H}X-Big: $big\\r\\n\\r\\n" --timeout 5)
expect_refusal "100 kB request head" "$out" 431 ""
many=$("$PY" -c 'print("".join("X-N%d: 1\\r\\n" % i for i in range(3000)))')
out=$(raw "GET http://good.test/smug-many HTTP/1.1\\r\\n${H}${many}\\r\\n" --timeout 5)
expect_refusal "3000 header fields" "$out" 431 ""
expect_none "oversized heads never reach the origin" inet 'line~smug-'

# --- a request line inside a correctly framed body is just body
out=$(raw "POST http://good.test/echo HTTP/1.1\\r\\n${H}Content-Length: 48\\r\\n\\r\\nGET http://good.test/smugD HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" --timeout 5)
expect_eq "body that looks like a request is forwarded as body" 200 "$(meta_status "$out")"
expect_re "... with its exact length" '"body_len": 48' "$out"
expect_none "... and is never a request line at the origin" inet 'line~smugD'

# --- the proxy still serves after all that
expect_eq "proxy still serves after the malformed requests" 200 "$(pcode http://good.test/)"
lab_done
