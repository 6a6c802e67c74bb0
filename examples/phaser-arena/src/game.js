// Phaser Arena: Phaser draws the simulation of sim.js; the Cappy adapter
// (cappy.js) lets crosscode-mcp play it: scenarios, freeform recordings
// of the player's input, replays at any timeScale, two cameras, frames
// from the WebGL canvas, and agent play: an agent holds the keyboard's
// and the pointer's actions and runs the simulation in steps, and reads
// the game's state (inspect).

import { Cappy, CappyFailure } from './cappy.js';
import { Sim, TICK_MS, WIDTH, HEIGHT, UP, DOWN, LEFT, RIGHT, FIRE, autopilot } from './sim.js';
import { TUNING, BUILD } from './tuning.js';

const FORMAT = 'phaser-arena/v1';
const params = new URLSearchParams(location.search);
const AUTOPILOT = params.get('autopilot') === '1'; // freeform play by a bot (CI has no player)
// The seed of a recording when the controller gives none (it gives one to
// every recording: the game advertises "seed"; default a new one each
// time): the same steps from the same seed play the same run.
const SEED = /^\d+$/.test(params.get('seed') ?? '') ? Number(params.get('seed')) >>> 0 : null;

/**
 * The run on screen: a Sim, where its inputs come from, and the operation
 * it belongs to (null for the idle attract mode).
 */
let run = null;
let timeScale = 1;
let acc = 0;
let presented = 0; // the running operation's presented ms

/**
 * A run: input(sim) is each tick's input mask, aimOf(sim) the world point
 * the player aims at with the pointer (null: none). inputs and aims are
 * what a recording keeps: every tick's mask, and the ticks where the aim
 * changed, [tick, x, y] (x, y null: released).
 */
function startRun(sim, input, op, maxTicks = Infinity, aimOf = () => null, pictures = new Set()) {
  // view: where the follow camera looks, from the run's first tick on.
  // steps: the ticks where the agent looked (the paused state of a step);
  // pictures: in a replay, those ticks, drawn as the recording drew them.
  run = { sim, input, aimOf, op, maxTicks, inputs: [], aims: [], aim: null, lastAim: null, steps: [], pictures, pictured: -1, stopping: false, finished: false, ended: null, view: { x: sim.player.x, y: sim.player.y } };
  run.done = new Promise((resolve) => { run.ended = resolve; });
  acc = 0;
  return run;
}

function idle() {
  const jitter = Math.random;
  startRun(new Sim({ seed: 7, mode: 'arena', tuning: TUNING }), (sim) => autopilot(sim, jitter), null);
}

/**
 * The follow camera trails the player, stepped with the simulation's ticks
 * (not with drawn frames): a tick looks the same at any timeScale and any
 * frame rate.
 */
const FOLLOW_LERP = 0.12;
function follow(r) {
  r.view.x += (r.sim.player.x - r.view.x) * FOLLOW_LERP;
  r.view.y += (r.sim.player.y - r.view.y) * FOLLOW_LERP;
}

/** One tick of the run, with its input recorded. */
function tick(r) {
  const mask = r.input(r.sim);
  const aim = r.aimOf(r.sim);
  r.inputs.push(mask);
  if (aim?.x !== r.lastAim?.x || aim?.y !== r.lastAim?.y) {
    r.aims.push([r.sim.tick, aim?.x ?? null, aim?.y ?? null]);
    r.lastAim = aim;
  }
  r.sim.step(mask, aim);
  follow(r);
}

/** The run is over: its operation ends, then (or at once) the attract mode plays. */
function finish(r) {
  if (r.finished) return;
  r.finished = true;
  r.ended(r);
  // The last tick stays on screen until the operation is over (its
  // last frames show it), then the attract mode plays.
  if (!r.op) idle();
  else r.op.done.then(() => { if (run === r) idle(); });
}

/**
 * Agent play: the agent's steps decide how far the simulation runs, not
 * the clock. op.advance(TICK_MS) is true while the step has a tick's time
 * left, false when a due frame must be drawn first or the step is done
 * (the library then reads a frame of the paused state and answers the
 * agent). A run that is over stays over while the agent's time passes;
 * the agent ends the play with stop_recording.
 */
function advanceAgent(r) {
  if (r.stopping) { finish(r); return; }
  for (let n = 0; n < 500 && r.op.advance(TICK_MS); n++) {
    if (!r.sim.over) tick(r);
  }
}

/** Advances the run by a frame's worth of presented time (delta ms). */
function advance(delta) {
  if (!run) return;
  const r = run;
  if (r.op?.control === 'agent') { advanceAgent(r); return; }
  acc += delta * timeScale;
  for (let n = 0; acc >= TICK_MS && n < 20; n++) {
    // A replay of the agent's play shows the paused state of each step, as
    // the recording did (an extra frame at that tick), so the two sides
    // have pictures of the same ticks to compare.
    if (r.op && r.pictures.has(r.sim.tick) && r.pictured !== r.sim.tick) {
      r.pictured = r.sim.tick;
      r.op.frame('step', { always: true });
    }
    // A frame due at this tick is drawn before the next step: each frame
    // shows the tick of its t, in a recording and in its replay at any
    // timeScale alike (the rest of acc waits for the next drawn frame).
    if (r.op && r.op.frameDue(r.sim.simT / timeScale)) break;
    if (r.sim.over || r.stopping || r.sim.tick >= r.maxTicks) {
      finish(r);
      return;
    }
    acc -= TICK_MS;
    tick(r);
  }
}

/** Emits a sim event on the operation's presented clock (simT / timeScale). */
const emitter = (op) => (name, payload) => { op.emit(name, payload, { simT: payload.simT }); if (name === 'KILL' || name === 'PLAYER_HIT') op.frame(name); };

// Keyboard input, for a person playing a recording.
const keys = new Set();
addEventListener('keydown', (e) => keys.add(e.code));
addEventListener('keyup', (e) => keys.delete(e.code));
const keyboard = () => (keys.has('ArrowUp') || keys.has('KeyW') ? UP : 0) | (keys.has('ArrowDown') || keys.has('KeyS') ? DOWN : 0)
  | (keys.has('ArrowLeft') || keys.has('KeyA') ? LEFT : 0) | (keys.has('ArrowRight') || keys.has('KeyD') ? RIGHT : 0) | (keys.has('Space') ? FIRE : 0);

// The agent's actions: the keyboard's keys and the pointer, as buttons and
// a pointer. Under agent control they are the only input (the keyboard
// and the autopilot are ignored).
const ACTIONS = [
  { name: 'move_up', kind: 'button', description: 'Move up while held (the keyboard\'s arrow up or W).' },
  { name: 'move_down', kind: 'button', description: 'Move down while held (arrow down or S).' },
  { name: 'move_left', kind: 'button', description: 'Move left while held (arrow left or A).' },
  { name: 'move_right', kind: 'button', description: 'Move right while held (arrow right or D).' },
  { name: 'fire', kind: 'button', description: 'Fire at the nearest enemy while held, every 10 ticks (space).' },
  { name: 'aim', kind: 'pointer', description: 'Fire towards this point of the picture (x, y in the frame\'s pixels) while pressed, instead of at the nearest enemy; pressed false stops.' },
];
const agentInput = (op) => () => (op.input.move_up ? UP : 0) | (op.input.move_down ? DOWN : 0)
  | (op.input.move_left ? LEFT : 0) | (op.input.move_right ? RIGHT : 0) | (op.input.fire ? FIRE : 0);

/**
 * The world point at pixel (x, y) of the canvas, as the camera shows it
 * now (the paused picture the agent pointed at). A recording keeps the
 * world point, so its replays aim the same with any camera.
 */
function toWorld(x, y, r) {
  const follow = camera === 'follow';
  const zoom = follow ? FOLLOW_ZOOM : 1;
  const cx = follow ? r.view.x : WIDTH / 2, cy = follow ? r.view.y : HEIGHT / 2;
  return { x: Math.round(cx + (x - WIDTH / 2) / zoom), y: Math.round(cy + (y - HEIGHT / 2) / zoom) };
}

/** Run-length encoding of the input masks: [[mask, count], ...]. */
function rle(masks) {
  const out = [];
  for (const m of masks) {
    const last = out[out.length - 1];
    if (last && last[0] === m) last[1]++;
    else out.push([m, 1]);
  }
  return out;
}

const cappy = new Cappy({
  game: { id: 'phaser-arena', name: 'Phaser Arena' },
  build: BUILD,
  cameras: ['follow', 'overview'],
  capabilities: ['seed'], // recordings are seeded by the controller: an agent's play replays the same, and saves as a play
  logger: console,
  hooks: {
    // The presented clock of an operation: the simulation time of the tick
    // on screen, shown at timeScale, so frames line up with the events
    // (t = simT / timeScale) and show what their t says.
    now(op) {
      if (run?.op === op) presented = run.sim.simT / timeScale;
      return presented;
    },
    timeScale(s) { timeScale = s; presented = 0; },
    camera(name) { useCamera(name ?? 'follow'); },
    async record(op) {
      // The agent plays (control "agent"): its actions are the input, in
      // its steps; else the autopilot or the keyboard, in real time.
      const agent = op.control === 'agent';
      const seed = op.seed ?? SEED ?? (Math.random() * 2 ** 31) >>> 0;
      const jitter = Math.random;
      const input = agent ? agentInput(op) : AUTOPILOT ? (sim) => autopilot(sim, jitter) : keyboard;
      const r = startRun(new Sim({ seed, mode: 'arena', tuning: TUNING, emit: emitter(op) }), input, op, Infinity, () => r.aim);
      r.seed = seed;
      op.stopped.then(() => { r.stopping = true; });
      await r.done;
      op.summary({ ticks: r.sim.tick, score: r.sim.score, wave: r.sim.wave, hp: r.sim.player.hp });
      const rec = { format: FORMAT, seed, ticks: r.sim.tick, inputs: rle(r.inputs) };
      if (r.aims.length) rec.aims = r.aims;
      if (agent) {
        if (r.steps.at(-1) !== r.sim.tick) r.steps.push(r.sim.tick); // the last look
        rec.steps = r.steps;
      }
      return { data: JSON.stringify(rec), format: FORMAT };
    },
    // A step's actions, before its first tick: the pointer's canvas pixel
    // becomes the world point it shows in the paused picture.
    input(applied, op) {
      const r = run;
      if (r?.op !== op) return;
      if (r.steps.at(-1) !== r.sim.tick) r.steps.push(r.sim.tick); // the agent looked at this tick
      for (const { name, value } of applied) if (name === 'aim') r.aim = value.pressed ? toWorld(value.x, value.y, r) : null;
    },
    async replay(op, data) {
      let rec;
      try { rec = JSON.parse(new TextDecoder().decode(data)); } catch { rec = null; }
      if (!rec || rec.format !== FORMAT) throw new CappyFailure('REPLAY_UNSUPPORTED', `not a ${FORMAT} replay`);
      const masks = rec.inputs.flatMap(([m, n]) => Array(n).fill(m));
      const aims = rec.aims ?? [];
      let next = 0, aim = null;
      const aimOf = (sim) => {
        for (; next < aims.length && aims[next][0] <= sim.tick; next++) aim = aims[next][1] === null ? null : { x: aims[next][1], y: aims[next][2] };
        return aim;
      };
      const r = startRun(new Sim({ seed: rec.seed, mode: 'arena', tuning: TUNING, emit: emitter(op) }), (sim) => masks[sim.tick] ?? 0, op, rec.ticks, aimOf, new Set(rec.steps ?? []));
      op.signal.addEventListener('abort', () => { r.stopping = true; });
      op.stopped.then(() => { r.stopping = true; });
      await r.done;
      op.summary({ ticks: r.sim.tick, score: r.sim.score });
    },
  },
});

cappy.actions(ACTIONS);

// What inspect reads: the run on screen, a path into it (player.hp,
// enemies.0.x, bullets.length); the empty query lists the keys.
cappy.state(() => {
  const r = run;
  const s = r?.sim;
  if (!s) return { run: null };
  return {
    operation: r.op ? { id: r.op.id, kind: r.op.kind, control: r.op.control ?? null, paused: r.op.paused } : null,
    mode: s.mode,
    seed: r.seed ?? null,
    tick: s.tick,
    simT: s.simT,
    over: s.over || null,
    score: s.score,
    wave: s.wave,
    toSpawn: s.toSpawn,
    player: s.player,
    enemies: s.enemies,
    bullets: s.bullets,
    aim: r.aim,
    input: r.op?.control === 'agent' ? r.op.input : null,
    camera: { name: camera, x: camera === 'follow' ? r.view.x : WIDTH / 2, y: camera === 'follow' ? r.view.y : HEIGHT / 2, zoom: camera === 'follow' ? FOLLOW_ZOOM : 1 },
    tuning: TUNING,
    build: BUILD,
  };
});

cappy.scenario('wave_clear', {
  name: 'Clear a wave',
  description: 'The autopilot fights one wave of enemies; ends when the wave is cleared or the player falls.',
  parameters: {
    enemies: { type: 'integer', minimum: 1, maximum: 20, default: 4, description: 'enemies in the wave' },
    seed: { type: 'integer', minimum: 1, maximum: 1000000, default: 1, description: 'where they spawn' },
  },
}, async (op, { enemies, seed }) => {
  const r = startRun(new Sim({ seed, mode: 'wave', enemies, tuning: TUNING, emit: emitter(op) }), (sim) => autopilot(sim), op);
  op.signal.addEventListener('abort', () => { r.stopping = true; });
  await r.done;
  op.summary({ outcome: r.sim.over, score: r.sim.score, hp: r.sim.player.hp, ticks: r.sim.tick });
});

cappy.scenario('survive', {
  name: 'Survive',
  description: 'Enemies keep coming for a number of seconds (simulated); the autopilot holds on.',
  parameters: {
    seconds: { type: 'number', minimum: 0.5, maximum: 30, default: 3 },
    difficulty: { type: 'string', enum: ['easy', 'normal', 'hard'], default: 'normal' },
  },
}, async (op, { seconds, difficulty }) => {
  const ticks = Math.round((seconds * 1000) / TICK_MS);
  const r = startRun(new Sim({ seed: 3, mode: 'survive', difficulty, ticks, tuning: TUNING, emit: emitter(op) }), (sim) => autopilot(sim), op);
  op.signal.addEventListener('abort', () => { r.stopping = true; });
  await r.done;
  op.summary({ outcome: r.sim.over, score: r.sim.score, hp: r.sim.player.hp });
});

cappy.scenario('broken_spawn', {
  name: 'Broken spawn (a known bug)',
  description: 'Spawns an enemy whose sprite is missing: the game logs an error and its spawn timer throws. Kept to show how errors reach the agent.',
}, async (op) => {
  op.emit('SPAWN_REQUESTED', { kind: 'ghost' });
  console.error('spawn: no sprite for enemy kind "ghost"');
  setTimeout(() => { const sprite = null; sprite.setTint(0xffffff); }, 0); // the bug: an uncaught TypeError
  await op.stopped; // the library fails the operation on the uncaught error
});

// Drawing.
let scene;
let gfx;
let hud;

let camera = 'follow';
const FOLLOW_ZOOM = 1.8;

function useCamera(name) {
  camera = name;
  const cam = scene.cameras.main;
  if (name === 'overview') {
    cam.setZoom(1);
    cam.centerOn(WIDTH / 2, HEIGHT / 2);
  } else {
    cam.setZoom(FOLLOW_ZOOM);
  }
}

function draw() {
  gfx.clear();
  gfx.fillStyle(0x1d2b3a, 1).fillRect(0, 0, WIDTH, HEIGHT);
  gfx.lineStyle(2, 0x3f6d8f, 1).strokeRect(1, 1, WIDTH - 2, HEIGHT - 2);
  for (let x = 40; x < WIDTH; x += 40) gfx.lineStyle(1, 0x25384a, 1).lineBetween(x, 0, x, HEIGHT);
  for (let y = 40; y < HEIGHT; y += 40) gfx.lineStyle(1, 0x25384a, 1).lineBetween(0, y, WIDTH, y);
  if (!run) return;
  const s = run.sim;
  for (const b of s.bullets) gfx.fillStyle(0xffe066, 1).fillCircle(b.x, b.y, 3);
  for (const e of s.enemies) gfx.fillStyle(0xe8554e, 1).fillCircle(e.x, e.y, 10);
  gfx.fillStyle(0x4ea3e8, 1).fillRect(s.player.x - 8, s.player.y - 8, 16, 16);
  if (camera === 'follow') scene.cameras.main.centerOn(run.view.x, run.view.y);
  // The same for a recording and its replays: what is shown depends on the
  // simulation only.
  hud.setText(`score ${s.score}   hp ${s.player.hp}   wave ${s.wave}`);
}

const game = new Phaser.Game({
  type: Phaser.WEBGL,
  width: WIDTH,
  height: HEIGHT,
  backgroundColor: '#10161d',
  banner: false,
  fps: { limit: 30 }, // the simulation keeps its own fixed ticks; 30 drawn frames a second spare a CPU-rendered browser
  scene: {
    create() {
      scene = this;
      gfx = this.add.graphics();
      hud = this.add.text(8, 8, '', { fontFamily: 'monospace', fontSize: '14px', color: '#e0e6ee' }).setScrollFactor(0);
      this.cameras.main.setBounds(-200, -200, WIDTH + 400, HEIGHT + 400);
      useCamera('follow');
      idle();
      cappy.frames(game.canvas);
      cappy.connect().catch((e) => console.warn(e.message)); // it connects again by itself
    },
    update(_, delta) {
      advance(Math.min(delta, 250));
      draw();
    },
  },
});
// Frames are read right after Phaser draws, while the WebGL buffer holds the frame.
game.events.on('postrender', () => cappy.drawn());
window.arena = { game, cappy, get run() { return run; } };
