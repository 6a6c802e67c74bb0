// The arena's simulation: fixed 20 ms ticks, a seeded generator, integer
// positions in events. Given the same seed, tuning and inputs it plays the
// same run on any machine and at any presentation speed; Phaser only draws
// it (game.js).

export const TICK_MS = 20;
export const WIDTH = 640;
export const HEIGHT = 400;

// Input bits, one mask per tick.
export const UP = 1, DOWN = 2, LEFT = 4, RIGHT = 8, FIRE = 16;

/** mulberry32: a small, fast, seeded generator. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const dist2 = (a, b) => (a.x - b.x) ** 2 + (a.y - b.y) ** 2;

/**
 * One run. mode: 'wave' (spawns `enemies`, ends when they are all down),
 * 'survive' (spawns forever, ends after `ticks`), 'arena' (endless waves:
 * freeform play). emit(name, payload) receives every event with simT.
 */
export class Sim {
  constructor({ seed = 1, mode = 'arena', enemies = 5, wave = 1, difficulty = 'normal', ticks = Infinity, tuning, emit = () => {} }) {
    this.rand = rng(seed);
    this.mode = mode;
    this.tuning = tuning;
    this.emit = emit;
    this.tick = 0;
    this.player = { x: WIDTH / 2, y: HEIGHT / 2, hp: tuning.playerHP, cooldown: 0, aim: { x: 1, y: 0 } };
    this.enemies = [];
    this.bullets = [];
    this.score = 0;
    this.nextID = 1;
    this.wave = wave;
    this.toSpawn = mode === 'wave' ? enemies : 3 + wave;
    this.spawnEvery = { easy: 40, normal: 25, hard: 12 }[difficulty] ?? 25;
    this.limit = ticks;
    this.over = '';
  }

  get simT() { return this.tick * TICK_MS; }

  #event(name, payload) { this.emit(name, { ...payload, simT: this.simT }); }

  #spawn() {
    const side = Math.floor(this.rand() * 4);
    const r = this.rand();
    const x = side === 0 ? 10 : side === 1 ? WIDTH - 10 : Math.round(r * WIDTH);
    const y = side === 2 ? 10 : side === 3 ? HEIGHT - 10 : Math.round(r * HEIGHT);
    const e = { id: this.nextID++, x, y, hp: this.tuning.enemyHP };
    this.enemies.push(e);
    this.#event('SPAWN', { enemy: e.id, x, y });
  }

  /**
   * Advances one tick with the input mask and, when the player aims with
   * the pointer, the world point aimed at (null otherwise): the player
   * fires towards it instead of at the nearest enemy.
   */
  step(input, aim = null) {
    if (this.over) return;
    const p = this.player, t = this.tuning;
    if (this.tick === 0) this.#event('START', { mode: this.mode, wave: this.wave, hp: p.hp });
    // Spawning.
    if (this.toSpawn > 0 && this.tick % this.spawnEvery === 0) {
      this.#spawn();
      if (this.mode !== 'survive') this.toSpawn--;
    }
    // The player.
    const dx = (input & RIGHT ? 1 : 0) - (input & LEFT ? 1 : 0);
    const dy = (input & DOWN ? 1 : 0) - (input & UP ? 1 : 0);
    if (dx || dy) {
      const n = Math.hypot(dx, dy);
      p.x = Math.min(WIDTH - 8, Math.max(8, p.x + (dx / n) * t.playerSpeed));
      p.y = Math.min(HEIGHT - 8, Math.max(8, p.y + (dy / n) * t.playerSpeed));
    }
    if (p.cooldown > 0) p.cooldown--;
    const target = aim ?? this.nearest();
    if (target) {
      const n = Math.sqrt(dist2(p, target)) || 1;
      p.aim = { x: (target.x - p.x) / n, y: (target.y - p.y) / n };
    }
    if ((input & FIRE || aim) && p.cooldown === 0) {
      this.bullets.push({ x: p.x, y: p.y, vx: p.aim.x * t.bulletSpeed, vy: p.aim.y * t.bulletSpeed, life: 60 });
      p.cooldown = t.fireCooldown;
    }
    // Bullets.
    for (const b of this.bullets) {
      b.x += b.vx; b.y += b.vy; b.life--;
      for (const e of this.enemies) {
        if (e.hp > 0 && dist2(b, e) < 14 * 14) {
          e.hp -= t.bulletDamage;
          b.life = 0;
          this.#event('HIT', { enemy: e.id, hp: Math.max(0, e.hp) });
          if (e.hp <= 0) {
            this.score += 10;
            this.#event('KILL', { enemy: e.id, score: this.score, x: Math.round(e.x), y: Math.round(e.y) });
          }
          break;
        }
      }
    }
    this.bullets = this.bullets.filter((b) => b.life > 0 && b.x > 0 && b.x < WIDTH && b.y > 0 && b.y < HEIGHT);
    // Enemies chase the player; touching hurts, and the enemy bursts.
    for (const e of this.enemies) {
      if (e.hp <= 0) continue;
      const n = Math.sqrt(dist2(e, p)) || 1;
      e.x += ((p.x - e.x) / n) * t.enemySpeed;
      e.y += ((p.y - e.y) / n) * t.enemySpeed;
      if (n < 16) {
        e.hp = 0;
        p.hp--;
        this.#event('PLAYER_HIT', { enemy: e.id, hp: p.hp });
      }
    }
    this.enemies = this.enemies.filter((e) => e.hp > 0);
    this.tick++;
    // The end, or the next wave.
    if (p.hp <= 0) this.#end('DEFEAT');
    else if (this.mode === 'wave' && this.toSpawn === 0 && this.enemies.length === 0) this.#end('WAVE_CLEARED');
    else if (this.tick >= this.limit) this.#end('TIME_UP');
    else if (this.mode === 'arena' && this.toSpawn === 0 && this.enemies.length === 0) {
      this.wave++;
      this.toSpawn = 3 + this.wave;
      this.#event('WAVE', { wave: this.wave });
    }
  }

  #end(why) {
    this.over = why;
    this.#event(why, { score: this.score, hp: this.player.hp, ticks: this.tick });
  }

  nearest() {
    let best = null, bd = Infinity;
    for (const e of this.enemies) {
      const d = dist2(e, this.player);
      if (d < bd) { bd = d; best = e; }
    }
    return best;
  }
}

/**
 * The autopilot: keeps its distance from the nearest enemy and fires.
 * With jitter (a function returning [0, 1)), it wanders a little, so that
 * freeform recordings differ from one another.
 */
export function autopilot(sim, jitter) {
  const p = sim.player;
  const e = sim.nearest();
  let mask = FIRE;
  if (e) {
    const d = Math.sqrt(dist2(p, e));
    const away = d < 90;
    if (Math.abs(e.x - p.x) > 6) mask |= (e.x > p.x) !== away ? RIGHT : LEFT;
    if (Math.abs(e.y - p.y) > 6) mask |= (e.y > p.y) !== away ? DOWN : UP;
    if (d > 90 && d < 160) mask &= FIRE; // in range: stand and shoot
  }
  if (jitter && jitter() < 0.2) mask ^= [UP, DOWN, LEFT, RIGHT][Math.floor(jitter() * 4)];
  return mask;
}
