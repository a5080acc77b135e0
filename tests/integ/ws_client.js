// ws_client.js PROXY_HOST:PORT URL [CA_FILE] [HOLD_SECONDS] [MESSAGE]
//
// A WebSocket handshake through sluice with node's own http module, the way
// node clients upgrade: ws://host:port/path as an absolute-form GET with
// Upgrade, or wss://host:port/path through a CONNECT, TLS (trusting CA_FILE)
// and then the GET. Sends one masked text frame (MESSAGE, default "hello")
// and prints "101 <what came back>", or the status of a response that was
// not a 101 ("403"), or "error <message>". With HOLD_SECONDS it then waits
// that long for the connection to be closed and prints "closed" (or "closed
// before the echo") or "open"; a close frame on the way prints "close CODE".
"use strict";
const http = require("http");
const tls = require("tls");
const fs = require("fs");
const crypto = require("crypto");

const [proxy, url, caFile, holdArg, messageArg] = process.argv.slice(2);
const [ph, pp] = proxy.split(":");
const u = new URL(url);
const port = u.port || (u.protocol === "wss:" ? 443 : 80);
const hold = Number(holdArg || 0);
const message = Buffer.from(messageArg || "hello");
const key = crypto.randomBytes(16).toString("base64");
const headers = {
  Host: `${u.hostname}:${port}`, Connection: "Upgrade", Upgrade: "websocket",
  "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13",
};

function done(line) { console.log(line); process.exit(0); }
setTimeout(() => done("error timeout"), 15000 + hold * 1000);

function frame(payload) {
  const mask = crypto.randomBytes(4);
  const body = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, body]);
}

function talk(res, sock, head) {
  let got = Buffer.alloc(0);
  let echoed = false;
  // the frames back, whole ones only; bytes that came with the 101 (head)
  // count too. The first data frame is the echo; a close frame prints its code.
  const take = (d) => {
    got = Buffer.concat([got, d]);
    for (;;) {
      if (got.length < 2) return;
      let len = got[1] & 0x7f, off = 2;
      if (len === 126) {
        if (got.length < 4) return;
        len = got.readUInt16BE(2); off = 4;
      } else if (len === 127) {
        if (got.length < 10) return;
        len = Number(got.readBigUInt64BE(2)); off = 10;
      }
      if (got[1] & 0x80) off += 4;
      if (got.length < off + len) return;
      const op = got[0] & 0x0f, payload = got.slice(off, off + len);
      got = got.slice(off + len);
      if (op === 8) {
        console.log(`close ${payload.length >= 2 ? payload.readUInt16BE(0) : "without a code"}`);
        continue;
      }
      if (echoed) continue;
      echoed = true;
      if (!hold) done(`101 ${payload.toString()}`);
      console.log(`101 ${payload.toString()}`);
    }
  };
  sock.write(frame(message));
  sock.on("data", take);
  take(head);
  sock.on("close", () => done(echoed ? "closed" : "closed before the echo"));
  sock.on("error", () => {});
  if (hold) setTimeout(() => done("open"), hold * 1000);
}

function upgrade(opts) {
  const req = http.request(Object.assign({ headers }, opts));
  req.on("upgrade", talk);
  req.on("response", (res) => done(String(res.statusCode)));
  req.on("error", (e) => done(`error ${e.message}`));
  req.end();
}

if (u.protocol === "ws:") {
  upgrade({ host: ph, port: pp, path: `http://${u.hostname}:${port}${u.pathname}` });
} else {
  const target = `${u.hostname}:${port}`;
  const c = http.request({ host: ph, port: pp, method: "CONNECT", path: target,
    headers: { Host: target } });
  c.on("connect", (res, sock) => {
    if (res.statusCode !== 200) done(String(res.statusCode));
    const t = tls.connect({ socket: sock, servername: u.hostname, ca: fs.readFileSync(caFile) }, () =>
      upgrade({ createConnection: () => t, path: u.pathname }));
    t.on("error", (e) => done(`error ${e.message}`));
  });
  c.on("error", (e) => done(`error ${e.message}`));
  c.end();
}
