// A fake controller for the library's tests of messages the real one may
// not send yet, or should never send: a loopback WebSocket server (RFC 6455,
// text frames, written here on node:http, no dependency) that the test
// drives message by message.

import { createServer } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** One adapter's connection: send(obj), next(type or predicate), the messages received. */
class Conn {
  constructor(socket) {
    this.socket = socket;
    this.received = [];
    this.waiters = [];
    this.closed = false;
    this.buf = Buffer.alloc(0);
    this.parts = [];
    socket.on('data', (b) => { this.buf = Buffer.concat([this.buf, b]); this.#parse(); });
    socket.on('close', () => { this.closed = true; this.#wake(); });
    socket.on('error', () => {});
  }

  #parse() {
    for (;;) {
      const b = this.buf;
      if (b.length < 2) return;
      const fin = b[0] & 0x80, opcode = b[0] & 0x0f, masked = b[1] & 0x80;
      let len = b[1] & 0x7f, off = 2;
      if (len === 126) { if (b.length < 4) return; len = b.readUInt16BE(2); off = 4; }
      else if (len === 127) { if (b.length < 10) return; len = Number(b.readBigUInt64BE(2)); off = 10; }
      const maskOff = off;
      if (masked) off += 4;
      if (b.length < off + len) return;
      const payload = Buffer.from(b.subarray(off, off + len));
      if (masked) for (let i = 0; i < len; i++) payload[i] ^= b[maskOff + (i & 3)];
      this.buf = b.subarray(off + len);
      if (opcode === 8) { this.#frame(8, Buffer.alloc(0)); this.socket.end(); return; }
      if (opcode === 9) { this.#frame(10, payload); continue; }
      if (opcode === 1 || opcode === 0) {
        this.parts.push(payload);
        if (fin) {
          const text = Buffer.concat(this.parts).toString('utf8');
          this.parts = [];
          this.received.push(JSON.parse(text));
          this.#wake();
        }
      }
    }
  }

  #wake() { for (const w of this.waiters.splice(0)) w(); }

  #frame(opcode, payload) {
    const n = payload.length;
    const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : n < 65536 ? Buffer.from([0x80 | opcode, 126, n >> 8, n & 255]) : (() => { const h = Buffer.alloc(10); h[0] = 0x80 | opcode; h[1] = 127; h.writeBigUInt64BE(BigInt(n), 2); return h; })();
    if (!this.socket.destroyed) this.socket.write(Buffer.concat([head, payload]));
  }

  /** Sends one message (an object, as JSON). */
  send(m) { this.#frame(1, Buffer.from(JSON.stringify(m))); }

  /**
   * The next message received (from where the last next() left off) that
   * has type (a string) or passes the predicate; the ones skipped are
   * kept in received. Rejects after ms.
   */
  async next(want, ms = 10000) {
    const match = typeof want === 'function' ? want : (m) => m.type === want;
    const end = Date.now() + ms;
    this.cursor ??= 0;
    for (;;) {
      while (this.cursor < this.received.length) {
        const m = this.received[this.cursor++];
        if (match(m)) return m;
      }
      if (this.closed) throw new Error(`connection closed while waiting for ${want}`);
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no ${typeof want === 'function' ? 'matching message' : want} within ${ms} ms; received: ${this.received.map((m) => m.type).join(' ')}`);
      await new Promise((r) => { const t = setTimeout(r, left); this.waiters.push(() => { clearTimeout(t); r(); }); });
    }
  }

  /** Messages received since the mark (an index into received). */
  since(mark) { return this.received.slice(mark); }

  /** Answers hello with welcome; returns the hello. */
  async welcome() {
    const hello = await this.next('hello');
    this.send({ type: 'welcome', protocol: 1, controller: { name: 'fake-controller', version: '0' } });
    return hello;
  }

  close() { this.#frame(8, Buffer.alloc(0)); this.socket.end(); }
}

/** Starts the fake controller on loopback: {endpoint, token, accept(), close()}. */
export async function fakeController() {
  const token = randomBytes(8).toString('hex');
  const pending = [];
  const waiting = [];
  const conns = [];
  const server = createServer((_, res) => { res.statusCode = 426; res.end(); });
  server.on('upgrade', (req, socket) => {
    const key = req.headers['sec-websocket-key'];
    const accept = createHash('sha1').update(key + GUID).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    const c = new Conn(socket);
    conns.push(c);
    const w = waiting.shift();
    if (w) w(c); else pending.push(c);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `ws://127.0.0.1:${server.address().port}`,
    token,
    /** The next adapter connection. */
    accept() { return pending.length ? Promise.resolve(pending.shift()) : new Promise((r) => waiting.push(r)); },
    async close() {
      for (const c of conns) c.socket.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
