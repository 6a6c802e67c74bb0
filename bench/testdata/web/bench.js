// The benchmarks' page (bench/browser_bench_test.go): a game whose stress
// scenario emits n events as fast as the connection takes them through the
// adapter library, or, with ?echo=ws://…&n=N, the same messages sent the
// same way to a bare WebSocket echo server (the floor).
import { Cappy } from './cappy.js';

const q = new URLSearchParams(location.search);
const CHUNK = 500;
const idle = (ws) => new Promise((resolve) => {
  const check = () => (ws.bufferedAmount > 256 << 10 ? setTimeout(check, 1) : resolve());
  check();
});

if (q.get('echo')) {
  const n = Number(q.get('n'));
  const ws = new WebSocket(q.get('echo'));
  ws.onopen = async () => {
    for (let i = 0; i < n; i++) {
      ws.send(JSON.stringify({ type: 'event', op: 'op_bench', t: i, event: 'TICK', payload: { i } }));
      if (i % CHUNK === CHUNK - 1) await idle(ws);
    }
  };
} else if (location.hash) {
  const cappy = new Cappy({ game: { id: 'bench' } });
  cappy.scenario('stress', { parameters: { events: { type: 'integer', minimum: 1, maximum: 10000000, default: 1000 } } }, async (op, { events }) => {
    for (let i = 0; i < events; i++) {
      op.emit('TICK', { i }, { t: i });
      if (i % CHUNK === CHUNK - 1) await op.drain();
    }
  });
  cappy.connect();
}
