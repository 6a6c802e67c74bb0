// The benchmarks' page (bench/browser_bench_test.go): a game whose stress
// scenario emits n events as fast as it can through the adapter library,
// or, with ?echo=ws://…&n=N, the same messages sent to a bare WebSocket
// echo server (the floor).
import { Cappy } from './cappy.js';

const q = new URLSearchParams(location.search);
if (q.get('echo')) {
  const n = Number(q.get('n'));
  const ws = new WebSocket(q.get('echo'));
  ws.onopen = () => {
    for (let i = 0; i < n; i++) ws.send(JSON.stringify({ type: 'event', op: 'op_bench', t: i, event: 'TICK', payload: { i } }));
  };
} else if (location.hash) {
  const cappy = new Cappy({ game: { id: 'bench' } });
  cappy.scenario('stress', { parameters: { events: { type: 'integer', minimum: 1, maximum: 10000000, default: 1000 } } }, (op, { events }) => {
    for (let i = 0; i < events; i++) op.emit('TICK', { i }, { t: i });
  });
  cappy.connect();
}
