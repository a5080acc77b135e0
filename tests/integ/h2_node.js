// node's http2 client through sluice-proxy's CONNECT (tests/integ/test_h2.sh).
// node h2_node.js PROXYHOST:PORT https://HOST:PORT CAFILE PATH...
// Opens one HTTP/2 connection inside the tunnel and sends one GET per path
// at once; prints "alpn PROTO", then "PATH STATUS FIRSTLINE" per path, in order.
const http = require('http');
const http2 = require('http2');
const tls = require('tls');
const fs = require('fs');

const [proxy, origin, cafile, ...paths] = process.argv.slice(2);
const [phost, pport] = proxy.split(':');
const u = new URL(origin);
const req = http.request({ host: phost, port: +pport, method: 'CONNECT', path: `${u.hostname}:${u.port}`,
  headers: { host: `${u.hostname}:${u.port}` } });
req.setTimeout(10000, () => { console.log('timeout'); process.exit(1); });
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('connect', res.statusCode); process.exit(1); }
  const sess = http2.connect(origin, {
    createConnection: () => tls.connect({ socket, servername: u.hostname, ALPNProtocols: ['h2'], ca: fs.readFileSync(cafile) }),
  });
  sess.on('error', (e) => { console.log('error', e.code || e.message); process.exit(1); });
  sess.socket.on('secureConnect', () => console.log('alpn', sess.socket.alpnProtocol));
  const out = new Array(paths.length);
  let left = paths.length;
  paths.forEach((p, i) => {
    const r = sess.request({ ':path': p });
    let status = 0, body = '';
    r.on('response', (h) => { status = h[':status']; });
    r.setEncoding('utf8');
    r.on('data', (d) => { body += d; });
    r.on('error', (e) => { out[i] = `${p} error ${e.code}`; });
    r.on('close', () => {
      if (!out[i]) out[i] = `${p} ${status} ${body.split('\n')[0]}`;
      if (--left === 0) { out.forEach((l) => console.log(l)); sess.close(); }
    });
  });
});
req.on('error', (e) => { console.log('error', e.message); process.exit(1); });
req.end();
