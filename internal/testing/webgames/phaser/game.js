// Star Catcher: a Phaser game with no Cappy adapter, for the page driver's
// tests. The cursor keys move the catcher; stars appear at random places,
// one a second (Phaser's timer); window.render_game_to_text() tells the
// state, as agent-built games do. With ?sounds=webaudio (or html5, Phaser's
// <audio> sound manager) it preloads a blip and a music track, loops the
// music, plays the blip when a star is caught, and a jingle at the start
// whose end turns the catcher green.
const SPEED = 150; // px per second
const SOUNDS = new URLSearchParams(location.search).get('sounds');
let scene;
const game = new Phaser.Game({
  type: Phaser.WEBGL,
  width: 640,
  height: 400,
  backgroundColor: '#223344',
  banner: false,
  audio: { disableWebAudio: SOUNDS === 'html5' },
  scene: {
    preload() {
      if (!SOUNDS) return;
      this.load.audio('blip', ['sounds/blip.ogg', 'sounds/blip.mp3']);
      this.load.audio('theme', ['sounds/theme.ogg', 'sounds/theme.mp3']);
    },
    create() {
      scene = this;
      this.loadedAtFrame = game.loop.frame;
      this.ready = false;
      this.score = 0;
      this.stars = [];
      this.catcher = this.add.rectangle(100, 200, 24, 24, 0x44ccff);
      this.label = this.add.text(8, 8, 'score 0', { fontFamily: 'monospace', fontSize: '16px', color: '#ffffff' });
      this.cursors = this.input.keyboard.createCursorKeys();
      const spawn = () => {
        const star = this.add.star(Phaser.Math.Between(20, 620), Phaser.Math.Between(40, 380), 5, 6, 12, 0xffdd33);
        this.stars.push(star);
      };
      for (let i = 0; i < 3; i++) spawn();
      this.time.addEvent({ delay: 1000, loop: true, callback: spawn });
      if (SOUNDS) {
        this.theme = this.sound.add('theme', { loop: true, volume: 0.5 });
        this.theme.play();
        const jingle = this.sound.add('blip');
        jingle.once('complete', () => {
          this.ready = true;
          this.catcher.setFillStyle(0x44ff88);
        });
        jingle.play();
      }
    },
    update(_, delta) {
      const c = this.cursors;
      const vx = (c.right.isDown ? 1 : 0) - (c.left.isDown ? 1 : 0);
      const vy = (c.down.isDown ? 1 : 0) - (c.up.isDown ? 1 : 0);
      this.catcher.x += vx * SPEED * delta / 1000;
      this.catcher.y += vy * SPEED * delta / 1000;
      this.stars = this.stars.filter((s) => {
        if (Math.abs(s.x - this.catcher.x) < 18 && Math.abs(s.y - this.catcher.y) < 18) {
          s.destroy();
          this.score++;
          this.label.setText('score ' + this.score);
          if (SOUNDS) this.sound.play('blip');
          return false;
        }
        return true;
      });
    },
  },
});
window.render_game_to_text = () => JSON.stringify(scene ? {
  phaser: Phaser.VERSION,
  catcher: { x: scene.catcher.x, y: scene.catcher.y },
  stars: scene.stars.map((s) => ({ x: s.x, y: s.y })),
  score: scene.score,
  time: game.loop.time,
  sounds: SOUNDS ? { loadedAtFrame: scene.loadedAtFrame, ready: scene.ready, theme: scene.theme.seek, playing: scene.sound.getAllPlaying().length } : undefined,
} : { phaser: Phaser.VERSION, booting: true });
