#!/bin/bash
# max-body-bytes: a request body over the cap is refused with 413. With a
# Content-Length the refusal comes before anything is sent; a chunked body
# is cut off where it passes the cap, so the origin never gets it whole.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test" "max-body-bytes 1000"

H='Host: good.test\r\n'
body900=$(head -c 900 /dev/zero | tr '\0' 'a')
out=$(raw "POST http://good.test/b1 HTTP/1.1\r\n${H}Content-Length: 900\r\nConnection: close\r\n\r\n$body900")
expect_eq "a 900-byte body under max-body-bytes 1000 goes through" 200 "$(meta_status "$out")"
expect_eq "... and reaches the origin whole" 900 "$(inetq ev=body --field len)"

body2000=$(head -c 2000 /dev/zero | tr '\0' 'b')
out=$(raw "POST http://good.test/b2 HTTP/1.1\r\n${H}Content-Length: 2000\r\n\r\n$body2000")
expect_refusal "a 2000-byte Content-Length body over the cap" "$out" 413 body-too-large 'max-body-bytes 1000'
expect_none "... and the origin never saw the request" inet 'line~/b2'
expect_eq "... logged: refuse, body-too-large, 413" "refuse body-too-large 413" \
	"$(logq path=/b2 --field decision) $(logq path=/b2 --field reason) $(logq path=/b2 --field status)"

chunk=$(head -c 600 /dev/zero | tr '\0' 'c')
out=$(raw "POST http://good.test/b3 HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n258\r\n$chunk\r\n258\r\n$chunk\r\n258\r\n$chunk\r\n0\r\n\r\n")
expect_refusal "a chunked body passing the cap" "$out" 413 body-too-large
expect_none "... the origin never received the body whole" inet ev=body 'len=1800'
expect_eq "... logged as body-too-large" body-too-large "$(logq path=/b3 --field reason)"

out=$(pcurl -o /dev/null -w '%{http_code}' --data-binary "@/etc/services" http://good.test/b4 2>&1)
expect_eq "curl uploading a file over the cap gets 413" 413 "$out"
lab_done
