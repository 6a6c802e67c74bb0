// Agent play and inspect (the capabilities input and inspect), message by
// message against a fake controller: actions after welcome and when they
// change, steps run exactly their simulation time with their actions held,
// refusals that leave the play going, a frame of the paused state before
// stepped, and inspect's paths, errors and bounds.

import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Cappy, Capability, Code, ActionKind, MAX_INSPECT_BYTES, checkActions, checkStep, parsePath, snapshotJSON, resolvePath } from '../cappy.js';
import { fakeController } from './fakecontroller.mjs';

const TICK = 20;
const cleanup = [];
afterEach(async () => { while (cleanup.length) await cleanup.pop()(); });

const ACTIONS = [
  { name: 'left', kind: 'button', description: 'walk left while held' },
  { name: 'right', kind: 'button', description: 'walk right while held' },
  { name: 'throttle', kind: 'axis', description: 'speed, -1 to 1' },
  { name: 'stick', kind: 'axis2d', description: 'a stick' },
  { name: 'aim', kind: 'pointer', description: 'where to aim, in the frame\'s pixels' },
  { name: 'say', kind: 'text', description: 'what to say' },
];

/**
 * A toy game on the library: a dot on a line, stepped in 20 ms ticks by
 * its own loop (as a browser game's frame loop would), which runs only
 * while op.advance allows under agent control. It emits POS every 100 ms
 * of simulation time and SAID when a text arrives; its frames show its
 * state (the bytes name the tick and position); its replay data holds the
 * input of every tick. Deterministic: no clock, no randomness.
 */
async function toyGame({ frames = true, actions = ACTIONS, state = true } = {}) {
  const ctl = await fakeController();
  const world = { sim: null, inputs: [], applied: [], frameTicks: [] };
  const cappy = new Cappy({
    endpoint: ctl.endpoint, token: ctl.token, game: { id: 'toy' }, reconnect: false,
    hooks: {
      async record(op) {
        const sim = { tick: 0, x: 0, said: [] };
        world.sim = sim;
        const input = () => ({ dir: (op.input.right ? 1 : 0) - (op.input.left ? 1 : 0), speed: 1 + (op.input.throttle ?? 0) });
        while (!op.isStopped) {
          // Outside agent control advance() is always true: one tick a turn, on the game's own clock.
          for (let n = 0; op.advance(TICK) && (op.control === 'agent' || n < 1); n++) {
            const inp = input();
            world.inputs.push(inp);
            sim.x += inp.dir * inp.speed;
            sim.tick++;
            if (sim.tick % 5 === 0) op.emit('POS', { x: sim.x, simT: sim.tick * TICK }, { simT: sim.tick * TICK });
          }
          await new Promise((r) => setTimeout(r, 1));
        }
        return { data: JSON.stringify({ inputs: world.inputs }), format: 'toy/v1' };
      },
      input(applied, op) {
        world.applied.push(applied);
        for (const a of applied) if (a.name === 'say') op.emit('SAID', { text: a.value });
      },
    },
  });
  if (actions) cappy.actions(actions);
  if (state) cappy.state(() => ({ sim: world.sim, ticks: world.inputs.length, big: world.big }));
  if (frames) {
    cappy.frames({
      capture() {
        const s = world.sim;
        world.frameTicks.push(s?.tick ?? -1);
        return { mime: 'image/png', width: 64, height: 40, data: new TextEncoder().encode(`tick=${s?.tick} x=${s?.x}`) };
      },
    });
  }
  const connected = cappy.connect();
  const conn = await ctl.accept();
  const hello = await conn.welcome();
  await connected;
  cleanup.push(async () => { await cappy.close(); await ctl.close(); });
  return { ctl, conn, cappy, hello, world };
}

/** Starts an agent-controlled recording; returns its op id. */
async function agentRecording(conn, extra = {}) {
  const op = `op_${Math.random().toString(36).slice(2)}`;
  conn.send({ type: 'record_start', op, control: 'agent', ...extra });
  await conn.next((m) => m.type === 'started' && m.op === op);
  return op;
}

let stepSeq = 0;
/** Sends a step and returns the messages up to its answer (stepped or step_refused), the answer last. */
async function step(conn, op, actions, ms) {
  const id = `s${++stepSeq}`;
  const mark = conn.received.length;
  conn.send({ type: 'step', op, id, actions, ms });
  const answer = await conn.next((m) => (m.type === 'stepped' || m.type === 'step_refused') && m.id === id);
  assert.equal(answer.op, op);
  return conn.since(mark).filter((m) => m.type !== 'pong' && conn.received.indexOf(m) <= conn.received.indexOf(answer));
}

/** Polls cond until it holds (10 s at most). */
async function until(what, cond) {
  for (const end = Date.now() + 10000; !cond(); await new Promise((r) => setTimeout(r, 5))) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
  }
}

const decode = (f) => Buffer.from(f.data, 'base64').toString();

test('actions: hello advertises input and inspect; the actions follow welcome, and again when they change', async () => {
  const { conn, cappy, hello } = await toyGame();
  assert.ok(hello.capabilities.includes(Capability.INPUT));
  assert.ok(hello.capabilities.includes(Capability.INSPECT));
  const sent = await conn.next('actions');
  assert.deepEqual(sent, { type: 'actions', actions: ACTIONS });
  cappy.actions([...ACTIONS, { name: 'jump', kind: ActionKind.BUTTON, description: 'jump' }]);
  const again = await conn.next('actions');
  assert.equal(again.actions.at(-1).name, 'jump');
  assert.equal(again.actions.length, ACTIONS.length + 1);
});

test('actions: a game without them advertises neither input nor inspect, and refuses agent control', async () => {
  const { conn, hello } = await toyGame({ actions: null, state: false });
  assert.ok(!hello.capabilities.includes(Capability.INPUT));
  assert.ok(!hello.capabilities.includes(Capability.INSPECT));
  conn.send({ type: 'record_start', op: 'op_x', control: 'agent' });
  const f = await conn.next('failed');
  assert.equal(f.op, 'op_x');
  assert.equal(f.code, Code.CAPABILITY_MISSING);
  assert.ok(!conn.received.some((m) => m.type === 'actions' || m.type === 'started'));
});

test('actions: bad declarations are refused when declared', () => {
  for (const bad of [
    'move', [{ name: 'a', kind: 'button' }], [{ name: 'a', kind: 'wheel', description: 'd' }], [{ name: ' a', kind: 'button', description: 'd' }],
    [{ name: 'a', kind: 'button', description: 'd' }, { name: 'a', kind: 'axis', description: 'd' }],
    Array.from({ length: 300 }, (_, i) => ({ name: `a${i}`, kind: 'button', description: 'd' })),
  ]) assert.throws(() => checkActions(bad), TypeError, JSON.stringify(bad).slice(0, 80));
});

test('step: the simulation is paused until a step, runs exactly its ms with the buttons held, then pauses', async () => {
  const { conn, world } = await toyGame({ frames: false });
  const op = await agentRecording(conn);
  await new Promise((r) => setTimeout(r, 100)); // the game's loop runs meanwhile: paused, nothing happens
  assert.equal(world.sim.tick, 0);
  assert.ok(!conn.received.some((m) => m.type === 'event'));

  let got = await step(conn, op, [{ name: 'right', pressed: true }], 200);
  let answer = got.at(-1);
  assert.deepEqual(answer, { type: 'stepped', op, id: answer.id, t: 200, simT: 200 });
  assert.deepEqual(got.filter((m) => m.type === 'event').map((e) => [e.event, e.t, e.payload.x]), [['POS', 100, 5], ['POS', 200, 10]]);
  assert.equal(world.sim.tick, 10);

  // Held: a step without actions keeps right pressed.
  got = await step(conn, op, [], 100);
  assert.deepEqual(got.at(-1).simT, 300);
  assert.equal(world.sim.x, 15);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(world.sim.tick, 15, 'paused again after the step');

  // Changed: released right, pressed left, at half throttle.
  got = await step(conn, op, [{ name: 'right', pressed: false }, { name: 'left', pressed: true }, { name: 'throttle', value: -0.5 }], 100);
  assert.equal(world.sim.x, 12.5);
  assert.deepEqual(world.inputs.slice(-5).map((i) => i.dir), [-1, -1, -1, -1, -1]);
});

test('step: ms 0 applies and looks; a step that is not a whole number of ticks carries the rest over', async () => {
  const { conn, world } = await toyGame({ frames: false });
  const op = await agentRecording(conn);
  let answer = (await step(conn, op, [{ name: 'right', pressed: true }], 0)).at(-1);
  assert.equal(answer.type, 'stepped');
  assert.equal(answer.simT, 0);
  assert.equal(world.sim.tick, 0);
  assert.deepEqual(world.applied.at(-1), [{ name: 'right', value: true }]);
  answer = (await step(conn, op, [], 30)).at(-1);
  assert.equal(answer.simT, 20, 'one tick of 20 in 30 ms; 10 carried');
  answer = (await step(conn, op, [], 30)).at(-1);
  assert.equal(answer.simT, 60, '10 + 30 = two ticks');
  answer = (await step(conn, op, [], 10)).at(-1);
  assert.equal(answer.simT, 60);
  answer = (await step(conn, op, [], 10)).at(-1);
  assert.equal(answer.simT, 80);
  assert.equal(answer.t, 80);
});

test('step: an unknown action or a bad value is refused with INVALID_INPUT, nothing applied, and the play goes on', async () => {
  const { conn, world } = await toyGame({ frames: false });
  const op = await agentRecording(conn);
  await step(conn, op, [{ name: 'right', pressed: true }], 40);
  for (const [actions, ms, why] of [
    [[{ name: 'jump', pressed: true }], 20, /no action "jump"; the game's actions are: left, right/],
    [[{ name: 'right', pressed: 'yes' }], 20, /right is a button: it takes pressed/],
    [[{ name: 'right', value: 1 }], 20, /value is not one of its fields/],
    [[{ name: 'throttle', value: 2 }], 20, /throttle is an axis.*out of range/],
    [[{ name: 'stick', x: 0.5 }], 20, /stick is a axis2d.*y must be a number/],
    [[{ name: 'aim', x: -1, y: 3 }], 20, /x must be a number from 0/],
    [[{ name: 'aim', x: 1, y: 1, button: 1 }], 20, /button must be one of left, middle, right/],
    [[{ name: 'say', text: 7 }], 20, /say is a text/],
    [[{ name: 'left', pressed: true }, { name: 'right' }], 20, /right is a button/],
    ['left', 20, /actions must be an array/],
    [[], 10001, /ms must be a number from 0 to 10000/],
    [[], -1, /ms must be a number/],
  ]) {
    const got = await step(conn, op, actions, ms);
    const r = got.at(-1);
    assert.equal(r.type, 'step_refused', JSON.stringify(actions));
    assert.equal(r.code, Code.INVALID_INPUT);
    assert.match(r.message, why);
    assert.equal(got.length, 1, 'nothing else was sent');
  }
  assert.equal(world.sim.tick, 2);
  assert.equal(world.applied.length, 1, 'a refused step applies nothing, not even its valid actions');
  const after = (await step(conn, op, [], 40)).at(-1);
  assert.equal(after.type, 'stepped');
  assert.equal(after.simT, 80);
  assert.equal(world.sim.x, 4, 'right still held from the first step');
});

test('step: outside an agent-controlled recording, or while one runs, it is refused', async () => {
  const { conn } = await toyGame({ frames: false });
  conn.send({ type: 'step', op: 'op_none', id: 'a', actions: [], ms: 10 });
  let r = await conn.next('step_refused');
  assert.deepEqual([r.op, r.id, r.code], ['op_none', 'a', Code.OUT_OF_STATE]);
  conn.send({ type: 'record_start', op: 'op_free' });
  await conn.next('started');
  conn.send({ type: 'step', op: 'op_free', id: 'b', actions: [], ms: 10 });
  r = await conn.next('step_refused');
  assert.deepEqual([r.id, r.code], ['b', Code.OUT_OF_STATE]);
  conn.send({ type: 'stop', op: 'op_free' });
  await conn.next('completed');

  const op = await agentRecording(conn);
  conn.send({ type: 'step', op, id: 'c', actions: [], ms: 2000 });
  conn.send({ type: 'step', op, id: 'd', actions: [], ms: 20 });
  r = await conn.next((m) => m.id === 'd');
  assert.deepEqual([r.type, r.code], ['step_refused', Code.OPERATION_BUSY]);
  r = await conn.next((m) => m.id === 'c');
  assert.deepEqual([r.type, r.simT], ['stepped', 2000]);
});

test('step: with frames, due frames at their ticks during the step, then one of the paused state (reason step) just before stepped', async () => {
  const { conn, world } = await toyGame();
  const op = await agentRecording(conn, { frames: { fps: 10, maxWidth: 640, formats: ['image/png'] } });
  // The first picture, of the paused start, before any step.
  const first = await conn.next('frame');
  assert.deepEqual([first.t, first.reason, decode(first)], [0, undefined, 'tick=0 x=0']);
  let got = await step(conn, op, [{ name: 'right', pressed: true }], 250);
  const frames = got.filter((m) => m.type === 'frame');
  assert.deepEqual(frames.map((f) => [f.t, f.reason ?? 'due', decode(f)]), [
    [100, 'due', 'tick=5 x=5'], [200, 'due', 'tick=10 x=10'], [240, 'step', 'tick=12 x=12'],
  ]);
  assert.equal(got.at(-2).type, 'frame');
  assert.equal(got.at(-2).reason, 'step');
  assert.deepEqual(got.at(-1), { type: 'stepped', op, id: got.at(-1).id, t: 240, simT: 240 });
  // ms 0: the look is a frame of the same paused state.
  got = await step(conn, op, [], 0);
  assert.deepEqual(got.map((m) => [m.type, m.t]), [['frame', 240], ['stepped', 240]]);
  assert.equal(decode(got[0]), 'tick=12 x=12');
  // A pointer's x/y reach the game as given (a capture function's frames are the game's pixels), checked against the frame's size.
  await step(conn, op, [{ name: 'aim', x: 10, y: 20, pressed: true }], 0);
  const bad = (await step(conn, op, [{ name: 'aim', x: 65, y: 20 }], 0)).at(-1);
  assert.equal(bad.type, 'step_refused');
  assert.match(bad.message, /outside the 64x40 frame/);
  assert.deepEqual(world.applied.at(-1), [{ name: 'aim', value: { x: 10, y: 20, button: 'left', pressed: true } }]);
});

test('step: a canvas game draws the paused state before stepped; advance waits for the drawing', async () => {
  const { conn, cappy, world } = await toyGame({ frames: false });
  cappy.frames({ width: 0, height: 0 }); // a canvas with nothing drawn: drawn() reads no picture
  const op = await agentRecording(conn, { frames: { fps: 2, maxWidth: 640, formats: ['image/png'] } });
  conn.send({ type: 'step', op, id: 'c1', actions: [], ms: 100 });
  await new Promise((r) => setTimeout(r, 150));
  // The first frame (t 0) is due: the game's loop waits for the drawing.
  assert.equal(world.sim.tick, 0);
  assert.ok(!conn.received.some((m) => m.type === 'stepped'));
  cappy.drawn();
  await until('the step to run once the due frame was drawn', () => world.sim.tick === 5);
  await new Promise((r) => setTimeout(r, 50));
  assert.ok(!conn.received.some((m) => m.type === 'stepped'), 'stepped waits for the picture of the paused state');
  cappy.drawn();
  const r = await conn.next('stepped');
  assert.deepEqual([r.id, r.simT], ['c1', 100]);
});

test('stop: the agent\'s play is a recording, its replay data holds every tick\'s input', async () => {
  const { conn, world } = await toyGame({ frames: false });
  const op = await agentRecording(conn);
  await step(conn, op, [{ name: 'right', pressed: true }], 60);
  await step(conn, op, [{ name: 'left', pressed: true }, { name: 'right', pressed: false }], 40);
  conn.send({ type: 'stop', op });
  const done = await conn.next('completed');
  const data = JSON.parse(Buffer.from(done.replay.data, 'base64').toString());
  assert.deepEqual(data.inputs.map((i) => i.dir), [1, 1, 1, -1, -1]);
  assert.equal(world.sim.tick, 5);
  conn.send({ type: 'step', op, id: 'late', actions: [], ms: 20 });
  assert.equal((await conn.next((m) => m.id === 'late')).code, Code.OUT_OF_STATE);
});

test('determinism: the same steps from the same start give the same events and pictures', async () => {
  const play = async () => {
    const { conn } = await toyGame();
    const op = await agentRecording(conn, { frames: { fps: 5, maxWidth: 640, formats: ['image/png'] } });
    const seen = [];
    for (const [actions, ms] of [[[{ name: 'right', pressed: true }], 300], [[{ name: 'throttle', value: 0.5 }], 0], [[], 250], [[{ name: 'right', pressed: false }, { name: 'say', text: 'hi' }], 120]]) {
      for (const m of await step(conn, op, actions, ms)) seen.push(m.type === 'frame' ? ['frame', m.t, m.reason, decode(m)] : m.type === 'event' ? ['event', m.t, m.event, m.payload] : [m.type, m.t, m.simT]);
    }
    return seen;
  };
  const a = await play();
  const b = await play();
  assert.deepEqual(a, b);
  assert.ok(a.some((m) => m[0] === 'event' && m[2] === 'SAID'));
  assert.equal(a.filter((m) => m[0] === 'stepped').length, 4);
});

test('inspect: a path into the registered state; the empty query lists what can be asked', async () => {
  const { conn, world } = await toyGame({ frames: false });
  const ask = async (query, id = `i${Math.random()}`) => {
    conn.send({ type: 'inspect', id, query });
    const r = await conn.next((m) => m.type === 'inspect_result' && m.id === id);
    assert.deepEqual(Object.keys(r).sort(), r.error ? ['error', 'id', 'type'] : ['id', 'type', 'value']);
    return r;
  };
  // Before any play: the state has sim null.
  let r = await ask('');
  assert.match(r.value.syntax, /player\.hp/);
  assert.deepEqual(r.value.keys, { sim: 'null', ticks: 'number 0' });
  const op = await agentRecording(conn);
  await step(conn, op, [{ name: 'right', pressed: true }], 100);
  r = await ask('');
  assert.equal(r.value.keys.sim, 'object: tick, x, said');
  assert.deepEqual((await ask('sim')).value, { tick: 5, x: 5, said: [] });
  assert.equal((await ask('sim.x')).value, 5);
  assert.equal((await ask(' sim["tick"] ')).value, 5);
  world.sim.said.push('a', 'b');
  assert.equal((await ask('sim.said[1]')).value, 'b');
  assert.equal((await ask('sim.said.length')).value, 2);
  r = await ask('sim.hp');
  assert.equal(r.error.code, Code.UNKNOWN_QUERY);
  assert.match(r.error.message, /no "hp" in sim; it has: tick, x, said/);
  r = await ask('sim.said.5');
  assert.equal(r.error.code, Code.UNKNOWN_QUERY);
  assert.match(r.error.message, /array of 2/);
  for (const q of ['sim.', 'sim..x', 'sim[x]', 'sim[0']) assert.equal((await ask(q)).error.code, Code.INVALID_QUERY, q);
  assert.equal((await ask('sim.constructor')).error.code, Code.UNKNOWN_QUERY);
  // Too large: an error that says to narrow it, never a truncated value.
  world.big = Array.from({ length: 40000 }, (_, i) => ({ i, name: `item ${i}` }));
  r = await ask('big');
  assert.equal(r.error.code, Code.VALUE_TOO_LARGE);
  assert.equal((await ask('big.39999.name')).value, 'item 39999');
  // Answered while a step runs too.
  conn.send({ type: 'step', op, id: 'long', actions: [], ms: 5000 });
  assert.equal(typeof (await ask('ticks')).value, 'number');
  await conn.next((m) => m.id === 'long');
});

test('inspect: without a registered state, or when reading it throws, an error result', async () => {
  const { conn } = await toyGame({ frames: false, state: false });
  conn.send({ type: 'inspect', id: 1, query: '' });
  let r = await conn.next('inspect_result');
  assert.deepEqual(r, { type: 'inspect_result', id: 1, error: { code: Code.CAPABILITY_MISSING, message: r.error.message } });
  const g = await toyGame({ frames: false });
  g.cappy.state(() => { throw new RangeError('the world is gone'); });
  const warn = console.warn;
  console.warn = () => {};
  try {
    g.conn.send({ type: 'inspect', id: 'x', query: 'a' });
    r = await g.conn.next('inspect_result');
  } finally {
    console.warn = warn;
  }
  assert.equal(r.error.code, Code.ADAPTER_ERROR);
  assert.match(r.error.message, /RangeError: the world is gone/);
});

test('checks: step values, paths and snapshots without a controller', () => {
  const declared = new Map(ACTIONS.map((a) => [a.name, a]));
  // Pointer: frame pixels to the game's (a canvas twice the frame's width), button and pressed kept when omitted.
  const frame = { width: 320, height: 200, scale: 0.5 };
  let set = checkStep([{ name: 'aim', x: 100, y: 50, button: 'right', pressed: true }], declared, {}, frame);
  assert.deepEqual(set, [['aim', { x: 200, y: 100, button: 'right', pressed: true }]]);
  set = checkStep([{ name: 'aim', x: 10, y: 10 }], declared, { aim: set[0][1] }, frame);
  assert.deepEqual(set, [['aim', { x: 20, y: 20, button: 'right', pressed: true }]]);
  assert.deepEqual(checkStep([{ name: 'say' }], declared), [['say', '']], 'no text is the empty text');
  assert.throws(() => checkStep(Array(65).fill({ name: 'say', text: 'a' }), declared), /at most 64/);
  assert.throws(() => checkStep([{ name: 'aim', x: 321, y: 10 }], declared, {}, frame), /outside the 320x200 frame/);
  assert.deepEqual(checkStep([{ name: 'stick', x: -1, y: 1 }, { name: 'say', text: 'go' }], declared), [['stick', { x: -1, y: 1 }], ['say', 'go']]);
  assert.deepEqual(parsePath('a.b[3]["c d"].e'), ['a', 'b', '3', 'c d', 'e']);
  class Thing { constructor() { this.hp = 3; this.fn = () => 1; } get alive() { return this.hp > 0; } }
  const t = new Thing();
  assert.equal(resolvePath({ t }, ['t', 'alive']), true);
  assert.equal(snapshotJSON(t), '{"hp":3}');
  const cyc = { m: new Map([['k', 1]]), s: new Set([1, 2]), n: NaN, b: 2n, u8: new Uint8Array([1, 2]) };
  cyc.self = cyc;
  assert.deepEqual(JSON.parse(snapshotJSON(cyc)), { m: { k: 1 }, s: [1, 2], n: null, b: '2', u8: [1, 2], self: '[circular]' });
  assert.throws(() => snapshotJSON('x'.repeat(MAX_INSPECT_BYTES)), (e) => e.code === Code.VALUE_TOO_LARGE);
  assert.equal(snapshotJSON('é'.repeat(1000), 2002), JSON.stringify('é'.repeat(1000)));
  assert.throws(() => snapshotJSON('é'.repeat(1000), 2001), (e) => e.code === Code.VALUE_TOO_LARGE, 'bytes, not characters');
});
