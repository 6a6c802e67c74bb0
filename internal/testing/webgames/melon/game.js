// Coin Hopper: a melonJS game with sounds and no Cappy adapter, for the
// page driver's tests, written as melonJS's guides show: the Application
// on its default renderer, audio.init, then loader.preload of a sound
// effect and a music track (melonJS's Howler-based audio: fetch, then
// decodeAudioData) behind melonJS's loading screen. Then the cursor keys
// move the hero to seeded coins; a coin plays the blip, the music loops,
// and the jingle played at the start says "ready" when it ends.
// window.render_game_to_text() tells the state, as agent-built games do.
import * as me from './melonjs.js';

const SPEED = 150; // px per second
const state = { phase: 'loading', frames: 0, loadedAtFrame: null, score: 0, ready: false, hero: null, coins: [] };

class Hero extends me.Renderable {
  constructor() {
    super(100, 240, 24, 24);
  }
  update(dt) {
    const v = SPEED * dt / 1000;
    if (me.input.isKeyPressed('left')) this.pos.x -= v;
    if (me.input.isKeyPressed('right')) this.pos.x += v;
    if (me.input.isKeyPressed('up')) this.pos.y -= v;
    if (me.input.isKeyPressed('down')) this.pos.y += v;
    state.coins = state.coins.filter((c) => {
      if (Math.abs(c.x - this.pos.x) > 20 || Math.abs(c.y - this.pos.y) > 20) return true;
      state.score++;
      me.audio.play('blip');
      return false;
    });
    return true;
  }
  draw(renderer) {
    renderer.setColor('#ffdd33');
    for (const c of state.coins) renderer.fillRect(c.x - 6, c.y - 6, 12, 12);
    renderer.setColor(state.ready ? '#44ff88' : '#44ccff');
    renderer.fillRect(this.pos.x - 12, this.pos.y - 12, 24, 24);
  }
}

class PlayStage extends me.Stage {
  onResetEvent(app) {
    state.phase = 'play';
    state.loadedAtFrame = state.frames;
    for (let i = 0; i < 5; i++) state.coins.push({ x: me.math.random(20, 620), y: me.math.random(20, 460) });
    state.hero = new Hero();
    app.world.addChild(new me.ColorLayer('background', '#202040'), 0);
    app.world.addChild(state.hero, 1);
    me.audio.playTrack('theme', 0.5);
    me.audio.play('blip', false, () => { state.ready = true; });
  }
}

const app = new me.Application(640, 480, { parent: 'screen', backgroundColor: '#202040' });
await app.init();
me.event.on(me.event.GAME_BEFORE_UPDATE, () => { state.frames++; });
me.input.bindKey(me.input.KEY.LEFT, 'left');
me.input.bindKey(me.input.KEY.RIGHT, 'right');
me.input.bindKey(me.input.KEY.UP, 'up');
me.input.bindKey(me.input.KEY.DOWN, 'down');
me.audio.init('ogg,mp3');
me.state.set(me.state.PLAY, new PlayStage());
me.loader.preload([
  { name: 'blip', type: 'audio', src: 'sounds/' },
  { name: 'theme', type: 'audio', src: 'sounds/' },
], () => me.state.change(me.state.PLAY));

window.render_game_to_text = () => JSON.stringify({
  melonjs: me.version,
  phase: state.phase,
  frames: state.frames,
  loadedAtFrame: state.loadedAtFrame,
  hero: state.hero ? { x: state.hero.pos.x, y: state.hero.pos.y } : null,
  coins: state.coins,
  score: state.score,
  ready: state.ready,
  theme: state.phase === 'play' ? me.audio.seek('theme') : null,
});
