using System;
using System.Collections.Generic;
using Crosscode.Cappy;

namespace Arena
{
    // The arena's simulation: a hero, waves of slimes and a golem boss in a
    // walled arena of 640x360 units. One Step is one frame of 1/60 s; it
    // depends only on the seed and on the hero's input, so the same seed
    // and the same input at the same frames give the same world, events
    // and pictures.

    /// <summary>Where a thing is.</summary>
    public sealed class Body
    {
        public double x, y, radius;
    }

    /// <summary>Hit points, with C# events the capture config may name (Hero/Health:Died).</summary>
    public sealed class Health
    {
        public int hp, max;
        public event Action<int> Hurt;
        public event Action Died;

        public void Take(int damage)
        {
            if (hp <= 0) return;
            hp = Math.Max(0, hp - damage);
            var h = Hurt;
            if (h != null) h(damage);
            if (hp == 0)
            {
                var d = Died;
                if (d != null) d();
            }
        }
    }

    /// <summary>How fast a thing walks, in units a second.</summary>
    public sealed class Mover
    {
        public double speed;
    }

    /// <summary>A foe's mind.</summary>
    public sealed class Brain
    {
        public string kind;
        public int damage, cooldown;
    }

    /// <summary>An event with listeners, shaped like Unity's UnityEvent&lt;int&gt; (AddListener).</summary>
    public sealed class IntEvent
    {
        readonly List<Action<int>> listeners = new List<Action<int>>();
        public void AddListener(Action<int> a) { listeners.Add(a); }
        public void RemoveListener(Action<int> a) { listeners.Remove(a); }
        public void Invoke(int v) { foreach (var l in listeners.ToArray()) l(v); }
    }

    /// <summary>The hero's coins, with a UnityEvent-like onCoin (Hero/Purse:onCoin).</summary>
    public sealed class Purse
    {
        public int coins;
        public IntEvent onCoin = new IntEvent();
    }

    /// <summary>The arena's own state: its wave and clock.</summary>
    public sealed class ArenaState
    {
        public string mode = "free";
        public int wave, tick, foesDown;
        public string outcome = "";
        public int bossPhase;
    }

    /// <summary>One object of the scene, with components inspect reads.</summary>
    public sealed class Entity : ISceneNode
    {
        public readonly List<Entity> Kids = new List<Entity>();
        public readonly List<object> Parts = new List<object>();
        public Entity(string name) { Name = name; }
        public string Name { get; set; }
        public T Get<T>() where T : class
        {
            foreach (var p in Parts) { var t = p as T; if (t != null) return t; }
            return null;
        }
        public IList<ISceneNode> Children() { return Kids.ConvertAll(k => (ISceneNode)k); }
        public IDictionary<string, object> Describe()
        {
            var d = new Dictionary<string, object>();
            var b = Get<Body>();
            if (b != null)
            {
                var pos = new JsonObject();
                pos["x"] = Math.Round(b.x, 3);
                pos["y"] = Math.Round(b.y, 3);
                d["position"] = pos;
            }
            return d;
        }
        public IList<object> Components() { return Parts; }
        public string ComponentName(object c) { return c.GetType().Name; }
    }

    /// <summary>The hero's input for one frame.</summary>
    public struct HeroInput
    {
        public double mx, my;
        public bool attack;
        public bool pointerDown;
        public double px, py;
    }

    public sealed class World
    {
        public const double Width = 640, Height = 360;
        public const double StepMs = 1000.0 / 60.0;
        const double HeroReach = 46, FoeReach = 22, CoinReach = 18;
        const int AttackCooldown = 24, HeroDamage = 12;

        public readonly Entity Hero, Foes, Coins, Arena;
        public readonly ArenaState State = new ArenaState();
        Rng rng;
        int attackWait, nextWaveIn, foeSerial, coinSerial;
        bool attackHeld;
        double targetX = -1, targetY = -1;
        public int Waves; // in a "waves" scenario, how many; 0: endless
        public Action<string, object> Emit = delegate { };

        public World(long seed)
        {
            rng = new Rng(seed);
            Hero = new Entity("Hero");
            Hero.Parts.Add(new Body { x = Width / 2, y = Height / 2, radius = 12 });
            Hero.Parts.Add(new Health { hp = 100, max = 100 });
            Hero.Parts.Add(new Mover { speed = 180 });
            Hero.Parts.Add(new Purse());
            Foes = new Entity("Foes");
            Coins = new Entity("Coins");
            Arena = new Entity("Arena");
            Arena.Parts.Add(State);
            nextWaveIn = 30;
        }

        /// <summary>Seeds the world's generator again (what follows depends on it).</summary>
        public void Reseed(long seed) { rng = new Rng(seed); }

        public string SceneName { get { return "Arena"; } }
        public IList<ISceneNode> Roots() { return new List<ISceneNode> { Arena, Hero, Foes, Coins }; }

        public bool Over { get { return State.outcome.Length > 0; } }

        /// <summary>Adds the boss (the boss scenario): a golem whose hp grows with difficulty.</summary>
        public void AddBoss(int difficulty)
        {
            State.mode = "boss";
            nextWaveIn = int.MaxValue;
            var g = Foe("Golem", "golem", Width - 80, Height / 2, 60 + 40 * difficulty, 70, 8 + 2 * difficulty, 22);
            Emit("BOSS_INTRO", new Dictionary<string, object> { { "hp", g.Get<Health>().hp } });
        }

        Entity Foe(string name, string kind, double x, double y, int hp, double speed, int damage, double radius)
        {
            var e = new Entity(name);
            e.Parts.Add(new Body { x = x, y = y, radius = radius });
            e.Parts.Add(new Health { hp = hp, max = hp });
            e.Parts.Add(new Mover { speed = speed });
            e.Parts.Add(new Brain { kind = kind, damage = damage });
            Foes.Kids.Add(e);
            Emit("SPAWN", new Dictionary<string, object> { { "kind", kind }, { "name", name }, { "x", Math.Round(x) }, { "y", Math.Round(y) } });
            return e;
        }

        void SpawnWave()
        {
            State.wave++;
            int n = 1 + State.wave;
            Emit("WAVE", new Dictionary<string, object> { { "wave", State.wave }, { "foes", n } });
            for (int i = 0; i < n; i++)
            {
                int side = rng.Next(4);
                double x = side == 0 ? 20 : side == 1 ? Width - 20 : 20 + rng.Next((int)Width - 40);
                double y = side == 2 ? 20 : side == 3 ? Height - 20 : 20 + rng.Next((int)Height - 40);
                foeSerial++;
                Foe("Slime" + foeSerial, "slime", x, y, 24, 60 + rng.Next(30), 4, 11);
            }
        }

        /// <summary>One frame of 1/60 s with the hero's input.</summary>
        public void Step(HeroInput input)
        {
            if (Over) return;
            State.tick++;
            var hb = Hero.Get<Body>();
            var hh = Hero.Get<Health>();
            double dt = StepMs / 1000;

            // The hero walks: the stick, else toward where the pointer went down.
            if (input.pointerDown) { targetX = input.px; targetY = input.py; }
            double mx = input.mx, my = input.my;
            if (mx == 0 && my == 0 && targetX >= 0)
            {
                double dx = targetX - hb.x, dy = targetY - hb.y, d = Math.Sqrt(dx * dx + dy * dy);
                if (d < 2) targetX = targetY = -1;
                else { mx = dx / d; my = dy / d; }
            }
            else if (mx != 0 || my != 0) targetX = targetY = -1;
            double len = Math.Sqrt(mx * mx + my * my);
            if (len > 1) { mx /= len; my /= len; }
            double sp = Hero.Get<Mover>().speed * dt;
            hb.x = Clamp(hb.x + mx * sp, hb.radius, Width - hb.radius);
            hb.y = Clamp(hb.y + my * sp, hb.radius, Height - hb.radius);

            // Attack: on the press, then again every cooldown while held.
            if (attackWait > 0) attackWait--;
            if (input.attack && (!attackHeld || attackWait == 0) && attackWait == 0)
            {
                attackWait = AttackCooldown;
                Entity best = null;
                double bestD = HeroReach;
                foreach (var f in Foes.Kids)
                {
                    var fb = f.Get<Body>();
                    double d = Dist(hb, fb) - fb.radius;
                    if (d < bestD) { bestD = d; best = f; }
                }
                Emit("SWING", new Dictionary<string, object> { { "hit", best != null } });
                if (best != null)
                {
                    var fh = best.Get<Health>();
                    fh.Take(HeroDamage);
                    Emit("HIT", new Dictionary<string, object> { { "target", best.Name }, { "damage", HeroDamage }, { "hp", fh.hp } });
                    if (best.Get<Brain>().kind == "golem") BossPhase(fh);
                }
            }
            attackHeld = input.attack;

            // Foes chase the hero and bite.
            foreach (var f in Foes.Kids)
            {
                var fb = f.Get<Body>();
                var brain = f.Get<Brain>();
                double dx = hb.x - fb.x, dy = hb.y - fb.y, d = Math.Sqrt(dx * dx + dy * dy);
                double step = f.Get<Mover>().speed * dt;
                if (d > fb.radius + hb.radius && d > 0) { fb.x += dx / d * step; fb.y += dy / d * step; }
                if (brain.cooldown > 0) brain.cooldown--;
                if (d - fb.radius - hb.radius < FoeReach - 14 && brain.cooldown == 0 && hh.hp > 0)
                {
                    brain.cooldown = 45;
                    hh.Take(brain.damage);
                    Emit("HERO_HURT", new Dictionary<string, object> { { "by", f.Name }, { "damage", brain.damage }, { "hp", hh.hp } });
                }
            }

            // The fallen drop coins.
            for (int i = Foes.Kids.Count - 1; i >= 0; i--)
            {
                var f = Foes.Kids[i];
                if (f.Get<Health>().hp > 0) continue;
                Foes.Kids.RemoveAt(i);
                State.foesDown++;
                var fb = f.Get<Body>();
                string kind = f.Get<Brain>().kind;
                Emit("FOE_DOWN", new Dictionary<string, object> { { "name", f.Name }, { "kind", kind } });
                if (kind == "golem") { Finish("victory"); return; }
                coinSerial++;
                var c = new Entity("Coin" + coinSerial);
                c.Parts.Add(new Body { x = fb.x + rng.Next(9) - 4, y = fb.y + rng.Next(9) - 4, radius = 6 });
                Coins.Kids.Add(c);
            }
            var purse = Hero.Get<Purse>();
            for (int i = Coins.Kids.Count - 1; i >= 0; i--)
            {
                if (Dist(hb, Coins.Kids[i].Get<Body>()) > CoinReach) continue;
                Coins.Kids.RemoveAt(i);
                purse.coins++;
                purse.onCoin.Invoke(purse.coins);
                Emit("COIN", new Dictionary<string, object> { { "coins", purse.coins } });
            }

            if (hh.hp <= 0) { Finish("defeat"); return; }
            if (State.mode == "boss") return;
            if (Foes.Kids.Count == 0)
            {
                if (Waves > 0 && State.wave >= Waves) { Finish("victory"); return; }
                if (nextWaveIn > 0) nextWaveIn--;
                else { SpawnWave(); nextWaveIn = 60; }
            }
        }

        void BossPhase(Health h)
        {
            int phase = h.hp * 3 <= h.max ? 2 : h.hp * 3 <= 2 * h.max ? 1 : 0;
            if (phase <= State.bossPhase) return;
            State.bossPhase = phase;
            Emit("BOSS_PHASE", new Dictionary<string, object> { { "phase", phase }, { "hp", h.hp } });
            // The golem calls slimes at each phase.
            for (int i = 0; i < phase + 1; i++)
            {
                foeSerial++;
                Foe("Slime" + foeSerial, "slime", 20 + rng.Next((int)Width - 40), 20, 20, 70, 3, 10);
            }
        }

        void Finish(string outcome)
        {
            State.outcome = outcome;
            Emit(outcome == "victory" ? "VICTORY" : "DEFEAT", new Dictionary<string, object> { { "wave", State.wave }, { "coins", Hero.Get<Purse>().coins } });
        }

        /// <summary>The scripted fighter: walks to the nearest foe (or coin) and swings at it.</summary>
        public HeroInput Autopilot()
        {
            var hb = Hero.Get<Body>();
            var input = new HeroInput();
            Entity goal = null;
            double best = double.MaxValue;
            foreach (var f in Foes.Kids)
            {
                double d = Dist(hb, f.Get<Body>());
                if (d < best) { best = d; goal = f; }
            }
            if (goal == null)
                foreach (var c in Coins.Kids)
                {
                    double d = Dist(hb, c.Get<Body>());
                    if (d < best) { best = d; goal = c; }
                }
            if (goal == null) return input;
            var gb = goal.Get<Body>();
            double dx = gb.x - hb.x, dy = gb.y - hb.y, dist = Math.Sqrt(dx * dx + dy * dy);
            if (goal.Get<Health>() != null && dist - gb.radius < HeroReach - 6)
            {
                input.attack = (State.tick / 6) % 2 == 0;
                return input;
            }
            if (dist > 0)
            {
                // Quantized, as a stick's steps: the replay holds what the frame saw.
                input.mx = Math.Round(dx / dist * 10) / 10;
                input.my = Math.Round(dy / dist * 10) / 10;
            }
            return input;
        }

        static double Dist(Body a, Body b)
        {
            double dx = a.x - b.x, dy = a.y - b.y;
            return Math.Sqrt(dx * dx + dy * dy);
        }

        static double Clamp(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }
    }

    /// <summary>A small seeded generator (xorshift64*): the same numbers everywhere.</summary>
    public sealed class Rng
    {
        ulong s;
        public Rng(long seed) { s = (ulong)seed * 0x9E3779B97F4A7C15UL + 0x2545F4914F6CDD1DUL; if (s == 0) s = 1; }
        public int Next(int n)
        {
            s ^= s >> 12; s ^= s << 25; s ^= s >> 27;
            ulong r = s * 0x2545F4914F6CDD1DUL;
            return (int)((r >> 33) % (ulong)n);
        }
    }
}
