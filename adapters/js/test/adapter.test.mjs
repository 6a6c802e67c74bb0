// The library against the real controller: crosscode-mcp as a stdio MCP
// server, driven through its capture tools, with this library as the
// game's adapter in this process.

import { test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Cappy, CappyFailure, RejectError, Code, Capability, sha256Hex } from '../cappy.js';
import { startController, waitFor } from './controller.mjs';
import { deflateSync } from 'node:zlib';

let ctl;
const adapters = [];

before(async () => { ctl = await startController(); });
after(async () => { await ctl?.close(); });
afterEach(async () => {
  while (adapters.length) await adapters.pop().close();
  await ctl.idle();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A game on the library: scenarios and hooks as a test wants them. */
function newGame(extra = {}) {
  const seen = { timeScale: [], camera: [], replays: [], cancelled: [], seeds: [] };
  const cappy = new Cappy({
    endpoint: ctl.endpoint, token: ctl.token,
    game: { id: 'js-test-game', name: 'JS Test Game' },
    build: 'js-test 1',
    cameras: ['follow', 'overview'],
    hooks: {
      timeScale: (s) => seen.timeScale.push(s),
      camera: (c) => seen.camera.push(c),
      async record(op) {
        seen.seeds.push(op.seed);
        const inputs = [];
        for (let i = 0; !op.isStopped; i++) {
          inputs.push(i % 3);
          op.emit('INPUT', { tick: i, input: i % 3 }, { simT: i * 50 });
          await sleep(5);
        }
        op.summary({ ticks: inputs.length });
        return { data: JSON.stringify({ format: 'js-test/v1', inputs }), format: 'js-test/v1' };
      },
      async replay(op, data, info) {
        seen.seeds.push(op.seed);
        seen.replays.push({ sha: await sha256Hex(data), info });
        const { inputs } = JSON.parse(new TextDecoder().decode(data));
        inputs.forEach((input, i) => op.emit('INPUT', { tick: i, input }, { simT: i * 50 }));
      },
    },
    ...extra,
  });
  cappy.scenario('count', {
    name: 'Count',
    description: 'Emits n ticks.',
    parameters: {
      n: { type: 'integer', minimum: 1, maximum: 100, default: 3, description: 'how many' },
      mode: { type: 'string', enum: ['plain', 'fancy'], default: 'plain' },
      loud: { type: 'boolean' },
    },
  }, async (op, params) => {
    for (let i = 0; i < params.n; i++) op.emit('TICK', { i, mode: params.mode }, { simT: i * 10, durationMs: 5 });
    op.summary({ ticks: params.n });
  });
  cappy.scenario('wait', { parameters: { ms: { type: 'integer', minimum: 0, maximum: 60000, required: true } } }, async (op, { ms }) => {
    op.emit('WAITING', { ms });
    await new Promise((resolve) => { const t = setTimeout(resolve, ms); op.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }); });
    if (op.signal.aborted) {
      seen.cancelled.push({ reason: op.signal.reason, emitAfter: op.emit('AFTER_CANCEL') });
      return;
    }
    op.emit('WAITED', { ms });
  });
  cappy.scenario('throws', { parameters: { how: { type: 'string', enum: ['error', 'failure', 'sync', 'value'], required: true } } }, (op, { how }) => {
    op.emit('ABOUT_TO_THROW');
    if (how === 'sync') throw new RangeError('sync throw');
    if (how === 'value') throw 'a string'; // eslint-disable-line no-throw-literal
    return (async () => {
      await sleep(10);
      if (how === 'failure') throw new CappyFailure('BOSS_STUCK', 'the boss never spawned');
      throw new Error('async throw');
    })();
  });
  adapters.push(cappy);
  return { cappy, seen };
}

async function connected(g) {
  await g.cappy.connect();
  await waitFor('the registry', async () => (await ctl.call('capture_status')).adapter);
  return g;
}

test('handshake: hello names the adapter, game, build and capabilities', async () => {
  const g = await connected(newGame());
  const st = await ctl.call('capture_status');
  assert.equal(st.adapter.name, 'crosscode-js-adapter');
  assert.equal(st.adapter.game, 'js-test-game');
  assert.equal(st.adapter.build, 'js-test 1');
  assert.deepEqual(new Set(st.adapter.capabilities), new Set([Capability.SCENARIOS, Capability.FREEFORM_RECORDING, Capability.REPLAY, Capability.TIME_SCALE, Capability.ALTERNATE_CAMERAS]));
  assert.equal(st.adapter.scenarios, 3);
  assert.ok(g.cappy.connected);
});

test('handshake: a wrong token is a RejectError with its code', async () => {
  const cappy = new Cappy({ endpoint: ctl.endpoint, token: 'wrong', game: { id: 'x' } });
  adapters.push(cappy);
  await assert.rejects(cappy.connect(), (e) => e instanceof RejectError && e.code === Code.UNAUTHENTICATED);
});

test('handshake: a second adapter is refused while one is connected', async () => {
  await connected(newGame());
  const second = new Cappy({ endpoint: ctl.endpoint, token: ctl.token, game: { id: 'y' } });
  adapters.push(second);
  await assert.rejects(second.connect(), (e) => e instanceof RejectError && e.code === Code.OPERATION_BUSY);
});

test('registry: typed parameters, and a scenario added later is sent again', async () => {
  const g = await connected(newGame());
  let sc = await ctl.call('list_scenarios');
  assert.equal(sc.game, 'js-test-game');
  const count = sc.scenarios.find((s) => s.id === 'count');
  assert.deepEqual(count.parameters.n, { type: 'integer', minimum: 1, maximum: 100, default: 3, description: 'how many' });
  assert.deepEqual(count.parameters.mode.enum, ['plain', 'fancy']);
  assert.equal(count.parameters.loud.type, 'boolean');
  assert.equal(sc.scenarios.find((s) => s.id === 'wait').parameters.ms.required, true);
  g.cappy.scenario('late', { name: 'Late' }, (op) => { op.emit('LATE'); });
  sc = await waitFor('the new registry', async () => {
    const r = await ctl.call('list_scenarios');
    return r.scenarios.some((s) => s.id === 'late') && r;
  });
  const run = await ctl.call('run_scenario', { scenario: 'late' });
  assert.equal(run.status, 'completed');
  assert.equal(run.timeline[0].event, 'LATE');
});

test('registry: bad scenario descriptions are refused at registration', () => {
  const { cappy } = newGame();
  assert.throws(() => cappy.scenario(' padded', {}, () => {}), TypeError);
  assert.throws(() => cappy.scenario('p', { parameters: { x: { type: 'float' } } }, () => {}), TypeError);
  assert.throws(() => cappy.scenario('p', { parameters: { x: { type: 'integer', minimum: 1, default: 0 } } }, () => {}), TypeError);
  assert.throws(() => cappy.scenario('p', {}, 'not a function'), TypeError);
});

test('scenario: parameters with defaults, events in order, presented t', async () => {
  const g = await connected(newGame());
  const run = await ctl.call('run_scenario', { scenario: 'count', parameters: { n: 5 }, presentation: { timeScale: 0.5, camera: 'overview' } });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(run.events, 5);
  run.timeline.forEach((e, i) => {
    assert.equal(e.event, 'TICK');
    assert.equal(e.t, i * 20, 'simT 10*i shown at half speed');
    assert.equal(e.durationMs, 5);
    assert.deepEqual(e.payload, { i, mode: 'plain' });
  });
  assert.deepEqual(g.seen.timeScale, [0.5]);
  assert.deepEqual(g.seen.camera, ['overview']);
  // The next operation applies its own presentation: the defaults.
  await ctl.call('run_scenario', { scenario: 'count', parameters: { n: 1, mode: 'fancy' } });
  assert.deepEqual(g.seen.timeScale, [0.5, 1]);
  assert.deepEqual(g.seen.camera, ['overview', undefined]);
});

test('scenario: an unknown camera fails with UNKNOWN_CAMERA before it runs', async () => {
  await connected(newGame());
  const r = await ctl.callRaw('run_scenario', { scenario: 'count', presentation: { camera: 'drone' } });
  assert.equal(r.out.status, 'failed');
  assert.equal(r.out.code, Code.UNKNOWN_CAMERA);
  assert.equal(r.out.events, 0);
});

test('ping: answered while an operation is busy longer than the pong timeout', async () => {
  await connected(newGame());
  // The controller pings every 2 s and drops an adapter silent for 6 s.
  const run = await ctl.call('run_scenario', { scenario: 'wait', parameters: { ms: 7500 } });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.deepEqual(run.timeline.map((e) => e.event), ['WAITING', 'WAITED']);
  assert.ok(run.timeline[1].t >= 7500);
});

test('cancel: the game sees its signal aborted, emits nothing more, and the next operation runs', async () => {
  const g = await connected(newGame());
  const run = await ctl.call('run_scenario', { scenario: 'wait', parameters: { ms: 30000 }, waitSeconds: 1 });
  assert.equal(run.status, 'running');
  const c = await ctl.call('cancel_capture', { op: run.op });
  assert.equal(c.status, 'cancelled');
  await waitFor('the game to see the cancel', () => g.seen.cancelled.length === 1);
  assert.deepEqual(g.seen.cancelled[0], { reason: 'cancelled', emitAfter: false });
  const next = await ctl.call('run_scenario', { scenario: 'count', parameters: { n: 2 } });
  assert.equal(next.status, 'completed');
});

test('stop: a recording ends with its replay and the SHA-256 of its data', async () => {
  const g = await connected(newGame());
  const rec = await ctl.call('start_recording');
  assert.equal(rec.status, 'running');
  await waitFor('some input', async () => (await ctl.call('capture_status')).active?.events >= 5);
  const stopped = await ctl.call('stop_recording', { op: rec.op });
  assert.equal(stopped.status, 'completed', JSON.stringify(stopped));
  assert.equal(stopped.replay.format, 'js-test/v1');
  assert.match(stopped.replay.sha256, /^[0-9a-f]{64}$/);

  // The replay: the same bytes reach the game (checked against the
  // SHA-256), and the events match, at another timeScale too.
  for (const timeScale of [1, 0.5]) {
    const rp = await ctl.call('replay', { op: rec.op, presentation: { timeScale } });
    assert.equal(rp.status, 'completed', JSON.stringify(rp));
    assert.equal(rp.divergence.identical, true, JSON.stringify(rp.divergence));
    assert.equal(rp.divergence.compared, stopped.events);
  }
  assert.equal(g.seen.replays.length, 2);
  assert.equal(g.seen.replays[0].sha, stopped.replay.sha256);
  assert.equal(g.seen.replays[0].info.format, 'js-test/v1');
});

test('seed: a game that advertises seed gets the recording\'s seed in op.seed, and its replay the same', async () => {
  const g = await connected(newGame({ capabilities: [Capability.SEED] }));
  assert.ok((await ctl.call('capture_status')).adapter.capabilities.includes('seed'));
  for (const seed of [42, undefined]) {
    const rec = await ctl.call('start_recording', seed === undefined ? {} : { seed });
    await waitFor('some input', async () => (await ctl.call('capture_status')).active?.events >= 2);
    const stopped = await ctl.call('stop_recording', { op: rec.op });
    const rp = await ctl.call('replay', { op: rec.op });
    assert.equal(rp.divergence.identical, true, JSON.stringify(rp.divergence));
    assert.equal(stopped.seed, seed ?? 1);
  }
  assert.deepEqual(g.seen.seeds, [42, 42, 1, 1]);
  // Without the capability, the game gets none.
  const plain = newGame();
  await g.cappy.close();
  await connected(plain);
  const rec = await ctl.call('start_recording');
  await ctl.call('stop_recording', { op: rec.op });
  assert.deepEqual(plain.seen.seeds, [undefined]);
});

test('failed: what the game throws becomes failed with a code, never a hang', async () => {
  await connected(newGame());
  for (const [how, code, message] of [
    ['error', Code.ADAPTER_ERROR, /Error: async throw/],
    ['sync', Code.ADAPTER_ERROR, /RangeError: sync throw/],
    ['value', Code.ADAPTER_ERROR, /a string/],
    ['failure', 'BOSS_STUCK', /the boss never spawned/],
  ]) {
    const errors = [];
    const orig = console.error;
    console.error = (...a) => errors.push(a.join(' '));
    let r;
    try {
      r = await ctl.callRaw('run_scenario', { scenario: 'throws', parameters: { how } });
    } finally {
      console.error = orig;
    }
    assert.equal(r.out.status, 'failed', how);
    assert.equal(r.out.code, code, how);
    assert.match(r.out.message, message, how);
    assert.equal(r.out.timeline[0].event, 'ABOUT_TO_THROW');
    if (code === Code.ADAPTER_ERROR) assert.ok(errors.length > 0, 'an unexpected throw is logged');
  }
});

test('events: invalid events are refused by emit, not sent', async () => {
  const g = await connected(newGame());
  const got = [];
  g.cappy.scenario('bad', {}, (op) => {
    for (const f of [() => op.emit(''), () => op.emit('X', [1]), () => op.emit('X', {}, { t: -1 }), () => op.emit('X\u0001'), () => op.emit('X', {}, { durationMs: NaN })]) {
      try { f(); got.push('sent'); } catch (e) { got.push(e instanceof TypeError ? 'refused' : String(e)); }
    }
    op.emit('LATER', {}, { t: 100 });
    try { op.emit('EARLIER', {}, { t: 50 }); got.push('sent'); } catch { got.push('refused'); }
  });
  await waitFor('the registry', async () => (await ctl.call('list_scenarios')).scenarios.some((s) => s.id === 'bad'));
  const run = await ctl.call('run_scenario', { scenario: 'bad' });
  assert.equal(run.status, 'completed');
  assert.deepEqual(got, Array(6).fill('refused'));
  assert.deepEqual(run.timeline.map((e) => e.event), ['LATER']);
});

test('drain: a long burst of events arrives whole, in order', async () => {
  const g = await connected(newGame());
  const n = 20000;
  g.cappy.scenario('burst', {}, async (op) => {
    for (let i = 0; i < n; i++) {
      op.emit('B', { i }, { t: i / 10 });
      if (i % 500 === 499) await op.drain();
    }
  });
  await waitFor('the registry', async () => (await ctl.call('list_scenarios')).scenarios.some((s) => s.id === 'burst'));
  const run = await ctl.call('run_scenario', { scenario: 'burst' });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.equal(run.events, n);
  assert.deepEqual(run.timeline.at(-1).payload, { i: n - 1 });
  const page = await ctl.call('get_capture', { op: run.op, afterSeq: 12345, limit: 3 });
  assert.deepEqual(page.page.map((e) => e.payload.i), [12345, 12346, 12347]);
});

// A PNG of w x h pixels (RGB, a gradient with a moving bar), made here.
function png(w, h, phase) {
  const crcTable = Array.from({ length: 256 }, (_, n) => { let c = n; for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1; return c >>> 0; });
  const crc = (b) => { let c = 0xffffffff; for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8); return (c ^ 0xffffffff) >>> 0; };
  const chunk = (type, data) => {
    const out = Buffer.alloc(12 + data.length);
    out.writeUInt32BE(data.length, 0);
    out.write(type, 4, 'latin1');
    data.copy(out, 8);
    out.writeUInt32BE(crc(out.subarray(4, 8 + data.length)), 8 + data.length);
    return out;
  };
  const raw = Buffer.alloc((w * 3 + 1) * h);
  for (let y = 0; y < h; y++) {
    raw[y * (w * 3 + 1)] = 0;
    for (let x = 0; x < w; x++) {
      const i = y * (w * 3 + 1) + 1 + x * 3;
      const bar = Math.abs(x - (phase % w)) < 4;
      raw[i] = bar ? 255 : (x * 4) & 255; raw[i + 1] = (y * 6) & 255; raw[i + 2] = bar ? 0 : 128;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr[8] = 8; ihdr[9] = 2;
  return new Uint8Array(Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]));
}

test('frames: captured at the asked rate on the operation\'s clock, stored, and shown to the agent', async () => {
  const asked = [];
  let n = 0;
  const g = newGame();
  g.cappy.frames({ capture(req) { asked.push(req); n++; return { mime: 'image/png', width: 96, height: 60, data: png(96, 60, n * 9) }; } });
  await connected(g);
  assert.ok((await ctl.call('capture_status')).adapter.capabilities.includes(Capability.FRAMES));
  g.cappy.scenario('show', {}, async (op) => {
    for (let i = 0; i < 8; i++) {
      op.emit('STEP', { i });
      if (i === 4) op.frame('STEP');
      await sleep(200);
    }
  });
  await waitFor('the registry', async () => (await ctl.call('list_scenarios')).scenarios.some((s) => s.id === 'show'));
  const run = await ctl.call('run_scenario', { scenario: 'show', frames: 4 });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.ok(run.frames.stored >= 5 && run.frames.stored <= 9, JSON.stringify(run.frames));
  assert.deepEqual(run.frames.dropped, {});
  assert.equal(asked[0].maxWidth, 640);
  assert.ok(asked[0].formats.includes('image/png'));
  const shown = await ctl.callRaw('get_capture', { op: run.op, keyframes: 3 });
  const images = shown.content.filter((c) => c.type === 'image');
  assert.equal(images.length, 3, JSON.stringify(shown.out.picturesLeftOut ?? shown.out));
  for (const img of images) assert.ok(['image/png', 'image/jpeg'].includes(img.mimeType) && img.data.length > 100);
  // Without frames asked, none are sent.
  const before = n;
  const none = await ctl.call('run_scenario', { scenario: 'count', frames: 0 });
  assert.equal(none.status, 'completed');
  assert.equal(n, before);
});

test('frameDue: a canvas game draws each due frame, and each asked extra, before it steps on', async () => {
  const g = newGame();
  g.cappy.frames({ width: 0, height: 0 }); // a canvas that has nothing drawn yet: no frame is sent
  await connected(g);
  const seen = [];
  g.cappy.scenario('ticks', {}, async (op) => {
    seen.push(op.frameDue(0)); // the first frame is due at once
    g.cappy.drawn(); // the game drew it: read now
    seen.push(op.frameDue(100), op.frameDue(250)); // fps 4: the next is due at 250 ms
    op.frame('HIT'); // an extra, asked at an event
    seen.push(op.frameDue(100));
    g.cappy.drawn();
    seen.push(op.frameDue(100));
    op.frame('HIT'); // a second extra at once: over its allowance
    seen.push(op.frameDue(100));
    op.frame('step', { always: true }); // one the game must show: not held back
    seen.push(op.frameDue(100));
    g.cappy.drawn();
    seen.push(op.frameDue(100));
  });
  await waitFor('the registry', async () => (await ctl.call('list_scenarios')).scenarios.some((s) => s.id === 'ticks'));
  const run = await ctl.call('run_scenario', { scenario: 'ticks', frames: 4 });
  assert.equal(run.status, 'completed', JSON.stringify(run));
  assert.deepEqual(seen, [true, false, true, true, false, false, true, false]);
  // Without frames asked, no frame is ever due.
  seen.length = 0;
  assert.equal((await ctl.call('run_scenario', { scenario: 'ticks', frames: 0 })).status, 'completed');
  assert.deepEqual(seen, [false, false, false, false, false, false, false, false]);
});

test('agent play: the real controller steps the game with its actions held, inspects its state, and the play replays', async () => {
  // A dot on a line, stepped in 20 ms ticks only while op.advance allows.
  const world = { x: 0, tick: 0 };
  const cappy = new Cappy({
    endpoint: ctl.endpoint, token: ctl.token, game: { id: 'js-agent-game' },
    hooks: {
      timeScale() {}, // events carry simT: the library presents them at simT / timeScale
      async record(op) {
        Object.assign(world, { x: 0, tick: 0 });
        const inputs = [];
        while (!op.isStopped) {
          for (let n = 0; op.advance(20) && (op.control === 'agent' || n < 1); n++) {
            const dir = (op.input.right ? 1 : 0) - (op.input.left ? 1 : 0);
            inputs.push(dir);
            world.x += dir;
            world.tick++;
            if (world.tick % 5 === 0) op.emit('POS', { x: world.x }, { simT: world.tick * 20 });
          }
          await sleep(1);
        }
        return { data: JSON.stringify({ inputs }), format: 'js-agent/v1' };
      },
      replay(op, data) {
        const { inputs } = JSON.parse(new TextDecoder().decode(data));
        let x = 0;
        inputs.forEach((dir, i) => { x += dir; if ((i + 1) % 5 === 0) op.emit('POS', { x }, { simT: (i + 1) * 20 }); });
      },
    },
  });
  adapters.push(cappy);
  cappy.actions([{ name: 'left', kind: 'button', description: 'walk left' }, { name: 'right', kind: 'button', description: 'walk right' }]);
  cappy.state(() => ({ world }));
  cappy.frames({ capture: () => ({ mime: 'image/png', width: 96, height: 60, data: png(96, 60, world.x * 8) }) });
  await cappy.connect();
  const st = await waitFor('the adapter', async () => (await ctl.call('capture_status')).adapter);
  assert.ok(st.capabilities.includes(Capability.INPUT) && st.capabilities.includes(Capability.INSPECT), JSON.stringify(st));

  const start = await ctl.callRaw('start_recording', { control: 'agent', frames: 5 });
  assert.equal(start.isError, false, JSON.stringify(start.out ?? start.content));
  assert.deepEqual(start.out.actions.map((a) => a.name), ['left', 'right']);
  assert.equal(start.out.simT, 0);
  assert.equal(start.content.filter((c) => c.type === 'image').length, 1, 'the first picture');
  const op = start.out.op;

  let step = await ctl.callRaw('step_game', { actions: [{ name: 'right', pressed: true }], ms: 200 });
  assert.equal(step.isError, false, JSON.stringify(step.out ?? step.content));
  assert.deepEqual([step.out.t, step.out.simT], [200, 200]);
  assert.deepEqual(step.out.events.map((e) => [e.t, e.payload.x]), [[100, 5], [200, 10]]);
  assert.equal(step.content.filter((c) => c.type === 'image').length, 1, 'the picture of the paused state');
  step = await ctl.callRaw('step_game', { ms: 100 });
  assert.equal(step.out.simT, 300);
  assert.equal(world.x, 15, 'right held');
  const bad = await ctl.callRaw('step_game', { actions: [{ name: 'jump', pressed: true }], ms: 100 });
  assert.equal(bad.isError, true);
  assert.match(JSON.stringify(bad.content), /INVALID_INPUT/);

  assert.equal((await ctl.call('inspect_game', { query: 'world.x' })).value, 15);
  assert.deepEqual(Object.keys((await ctl.call('inspect_game', { query: '' })).value.keys), ['world']);
  assert.equal((await ctl.call('inspect_game', { query: 'world.y' })).errorCode, Code.UNKNOWN_QUERY);

  const stopped = await ctl.call('stop_recording', { op });
  assert.equal(stopped.status, 'completed', JSON.stringify(stopped));
  assert.equal(stopped.events, 3);
  const rp = await ctl.call('replay', { op, presentation: { timeScale: 0.5 } });
  assert.equal(rp.status, 'completed', JSON.stringify(rp));
  assert.equal(rp.divergence.identical, true, JSON.stringify(rp.divergence));
  assert.equal(rp.divergence.compared, 3);
});

test('reconnect: with reconnect on, a lost connection is made again, and an operation runs after it', async () => {
  // A TCP proxy in front of the controller: closing its sockets is a
  // lost connection to the adapter.
  const { createServer, connect } = await import('node:net');
  const target = new URL(ctl.endpoint);
  const sockets = new Set();
  const proxy = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    for (const s of [client, upstream]) { sockets.add(s); s.on('error', () => {}); s.on('close', () => sockets.delete(s)); }
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  const g = newGame({ endpoint: `ws://127.0.0.1:${proxy.address().port}`, reconnect: true });
  await connected(g);
  for (const s of sockets) s.destroy();
  await ctl.idle();
  await waitFor('the adapter to connect again', async () => (await ctl.call('capture_status')).adapter);
  const run = await ctl.call('run_scenario', { scenario: 'count', parameters: { n: 2 } });
  assert.equal(run.status, 'completed');
  await g.cappy.close();
  proxy.close();
});
