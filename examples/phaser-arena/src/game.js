// Phaser Arena: Phaser draws the simulation of sim.js; the Cappy adapter
// (cappy.js) lets crosscode-mcp play it: scenarios, freeform recordings
// of the player's input, replays at any timeScale, two cameras, and
// frames from the WebGL canvas.

import { Cappy, CappyFailure } from './cappy.js';
import { Sim, TICK_MS, WIDTH, HEIGHT, UP, DOWN, LEFT, RIGHT, FIRE, autopilot } from './sim.js';
import { TUNING, BUILD } from './tuning.js';

const FORMAT = 'phaser-arena/v1';
const params = new URLSearchParams(location.search);
const AUTOPILOT = params.get('autopilot') === '1'; // freeform play by a bot (CI has no player)

/**
 * The run on screen: a Sim, where its inputs come from, and the operation
 * it belongs to (null for the idle attract mode).
 */
let run = null;
let timeScale = 1;
let acc = 0;
let presented = 0; // the running operation's presented ms

function startRun(sim, input, op, maxTicks = Infinity) {
  // view: where the follow camera looks, from the run's first tick on.
  run = { sim, input, op, maxTicks, inputs: [], stopping: false, finished: false, ended: null, view: { x: sim.player.x, y: sim.player.y } };
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

/** Advances the run by a frame's worth of presented time (delta ms). */
function advance(delta) {
  if (!run) return;
  const r = run;
  acc += delta * timeScale;
  for (let n = 0; acc >= TICK_MS && n < 20; n++) {
    // A frame due at this tick is drawn before the next step: each frame
    // shows the tick of its t, in a recording and in its replay at any
    // timeScale alike (the rest of acc waits for the next drawn frame).
    if (r.op && r.op.frameDue(r.sim.simT / timeScale)) break;
    if (r.sim.over || r.stopping || r.sim.tick >= r.maxTicks) {
      if (!r.finished) {
        r.finished = true;
        r.ended(r);
        // The last tick stays on screen until the operation is over (its
        // last frames show it), then the attract mode plays.
        if (!r.op) idle();
        else r.op.done.then(() => { if (run === r) idle(); });
      }
      return;
    }
    acc -= TICK_MS;
    const mask = r.input(r.sim);
    r.inputs.push(mask);
    r.sim.step(mask);
    follow(r);
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
      const seed = (Math.random() * 2 ** 31) >>> 0;
      const jitter = Math.random;
      const r = startRun(new Sim({ seed, mode: 'arena', tuning: TUNING, emit: emitter(op) }), AUTOPILOT ? (sim) => autopilot(sim, jitter) : keyboard, op);
      op.stopped.then(() => { r.stopping = true; });
      await r.done;
      op.summary({ ticks: r.sim.tick, score: r.sim.score, wave: r.sim.wave, hp: r.sim.player.hp });
      return { data: JSON.stringify({ format: FORMAT, seed, ticks: r.sim.tick, inputs: rle(r.inputs) }), format: FORMAT };
    },
    async replay(op, data) {
      let rec;
      try { rec = JSON.parse(new TextDecoder().decode(data)); } catch { rec = null; }
      if (!rec || rec.format !== FORMAT) throw new CappyFailure('REPLAY_UNSUPPORTED', `not a ${FORMAT} replay`);
      const masks = rec.inputs.flatMap(([m, n]) => Array(n).fill(m));
      const r = startRun(new Sim({ seed: rec.seed, mode: 'arena', tuning: TUNING, emit: emitter(op) }), (sim) => masks[sim.tick] ?? 0, op, rec.ticks);
      op.signal.addEventListener('abort', () => { r.stopping = true; });
      op.stopped.then(() => { r.stopping = true; });
      await r.done;
      op.summary({ ticks: r.sim.tick, score: r.sim.score });
    },
  },
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

function useCamera(name) {
  camera = name;
  const cam = scene.cameras.main;
  if (name === 'overview') {
    cam.setZoom(1);
    cam.centerOn(WIDTH / 2, HEIGHT / 2);
  } else {
    cam.setZoom(1.8);
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
