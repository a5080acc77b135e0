// An HTTPS request from node through sluice-proxy's CONNECT, as proxy agents
// (https-proxy-agent, undici's ProxyAgent) make it (tests/integ/test_refuse_page.sh).
// node refuse_node.js PROXYHOST:PORT https://HOST[:PORT]/PATH CAFILE
// Prints "connect STATUS" when the CONNECT is not answered 200, else
// "STATUS FIRST-BODY-LINE" of the request inside the tunnel, or "error CODE".
const http = require('http');
const https = require('https');
const tls = require('tls');
const fs = require('fs');

const [proxy, url, cafile] = process.argv.slice(2);
const [phost, pport] = proxy.split(':');
const u = new URL(url);
const port = u.port || '443';
const timer = setTimeout(() => { console.log('timeout'); process.exit(1); }, 10000);
const req = http.request({ host: phost, port: +pport, method: 'CONNECT', path: `${u.hostname}:${port}`,
  headers: { host: `${u.hostname}:${port}` } });
req.on('connect', (res, socket) => {
  if (res.statusCode !== 200) { console.log('connect', res.statusCode); process.exit(0); }
  const agent = new https.Agent();
  agent.createConnection = () => tls.connect({ socket, servername: u.hostname, ca: fs.readFileSync(cafile) });
  const r = https.request({ host: u.hostname, port, path: u.pathname, agent });
  r.on('response', (resp) => {
    let body = '';
    resp.setEncoding('utf8');
    resp.on('data', (d) => { body += d; });
    resp.on('end', () => { console.log(resp.statusCode, body.split('\n')[0]); clearTimeout(timer); });
  });
  r.on('error', (e) => { console.log('error', e.code || e.message); process.exit(0); });
  r.end();
});
req.on('error', (e) => { console.log('error', e.code || e.message); process.exit(0); });
req.end();
