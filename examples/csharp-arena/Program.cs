using System;
using System.Collections;
using System.Collections.Generic;
using System.Diagnostics;
using System.Threading;
using Crosscode.Cappy;

namespace Arena
{
    // C# Arena: a console game on the Cappy core (adapters/unity/Runtime/Core),
    // as a Unity game is on the package, with the engine's part played by
    // this file: the frame loop (the clock), the hero's input (the agent's,
    // a replay's, or the autopilot as the player), pictures from the
    // software renderer, the scene for inspect and events, the seed.
    //
    // Environment: CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN (set by
    // crosscode-mcp; without them the game runs its autopilot for a few
    // seconds and quits), CAPPY_SEED, ARENA_AUTOPILOT=1 (the autopilot plays
    // a player's recordings), ARENA_RESETS=1 (the game starts each recording
    // and replay afresh itself: resets_itself), ARENA_FLASH=from-to,...
    // (simulation ms at which the floor is drawn red: a planted visual change).

    sealed class Game : IGameClock, IGameInput, IFrameSource, IGameRandom, IGameReset, ICappyLog
    {
        public World World;
        public bool Holding = true, HoldNext = true;
        public bool Scripted; // a scenario: the autopilot fights
        double fps = 60;
        bool agentOnly;
        readonly bool autopilot = Environment.GetEnvironmentVariable("ARENA_AUTOPILOT") == "1";
        readonly Dictionary<string, InputValue> agent = new Dictionary<string, InputValue>();
        HeroInput player;
        readonly List<double[]> flash = new List<double[]>();

        public Game(long seed)
        {
            World = NewWorld(seed);
            foreach (var part in (Environment.GetEnvironmentVariable("ARENA_FLASH") ?? "").Split(','))
            {
                var ab = part.Split('-');
                double a, b;
                if (ab.Length == 2 && double.TryParse(ab[0], out a) && double.TryParse(ab[1], out b)) flash.Add(new[] { a, b });
            }
        }

        public int Worlds; // how many worlds were made: the scene's generation

        World NewWorld(long s)
        {
            Worlds++;
            var w = new World(s);
            w.Emit = (name, payload) => Cappy.Emit(name, payload);
            return w;
        }

        // IGameClock
        public double StepMs { get { return World.StepMs; } }
        public void Hold(bool hold) { HoldNext = hold; }
        public void Pace(double framesPerSecond) { fps = framesPerSecond; }
        public double Fps { get { return fps; } }

        // IGameInput
        public IList<GameAction> Actions()
        {
            return new List<GameAction>
            {
                new GameAction("move", ActionKind.Axis2D, "Walk: x to the right, y down, each -1 to 1 (1 is 180 units a second). Held until changed."),
                new GameAction("attack", ActionKind.Button, "Swing at the nearest foe within reach (46 units); while held, again every 0.4 s."),
                new GameAction("pointer", ActionKind.Pointer, "Press on a point of the picture: the hero walks there (when move is 0)."),
            };
        }

        public void Apply(IList<InputValue> changes)
        {
            foreach (var c in changes) agent[c.Name] = c.Clone();
        }

        public void ReleaseAll() { agent.Clear(); }
        public void AgentOnly(bool on) { agentOnly = on; }

        public void Sample(IDictionary<string, InputValue> into)
        {
            into["move"] = new InputValue { Name = "move", Kind = ActionKind.Axis2D, X = player.mx, Y = player.my };
            into["attack"] = new InputValue { Name = "attack", Kind = ActionKind.Button, Pressed = player.attack };
        }

        /// <summary>What the hero does this frame: the agent's input (or a replay's), else the player's.</summary>
        public HeroInput Input()
        {
            player = autopilot || Scripted ? World.Autopilot() : new HeroInput();
            if (!agentOnly && agent.Count == 0) return player;
            var h = new HeroInput();
            InputValue v;
            if (agent.TryGetValue("move", out v)) { h.mx = v.X; h.my = v.Y; }
            if (agent.TryGetValue("attack", out v)) h.attack = v.Pressed == true;
            if (agent.TryGetValue("pointer", out v) && v.Pressed == true)
            {
                h.pointerDown = true;
                h.px = v.X; h.py = v.Y;
                v.Pressed = null; // a press, once: held pointers do not re-aim
            }
            return h;
        }

        // IFrameSource
        public bool Available { get { return true; } }
        public int ScreenWidth { get { return Render.W; } }
        public int ScreenHeight { get { return Render.H; } }
        public int MaxInFlight { get { return 2; } }
        public bool CanEncode(string mime) { return mime == Wire.MimePng || mime == Wire.MimeJpeg; }

        public void Capture(int maxWidth, string mime, int quality, Action<EncodedPicture> done)
        {
            int[] blocks;
            var px = Render.Draw(World, out blocks); // this frame's picture, now
            if (Flashing()) Render.Tint(px, blocks);
            ThreadPool.QueueUserWorkItem(delegate
            {
                int w, h;
                var scaled = Render.Scale(px, maxWidth, out w, out h);
                var data = mime == Wire.MimeJpeg ? Jpeg.Encode(scaled, w, h, Render.Rgb, quality, scaled == px ? blocks : null) : Render.Png(scaled, w, h);
                done(new EncodedPicture { Data = data, Mime = mime, Width = w, Height = h });
            });
        }

        bool Flashing()
        {
            double simT = World.State.tick * World.StepMs;
            foreach (var f in flash) if (simT >= f[0] && simT <= f[1]) return true;
            return false;
        }

        // IGameRandom: the world's generator follows the seed.
        public void Seed(long s)
        {
            World.Reseed(s);
        }

        // IGameReset (ARENA_RESETS=1): a new world for each recording and replay.
        public void Restart(long s, Action done)
        {
            World = NewWorld(s);
            done();
        }

        // ICappyLog: stderr is the game's log.
        public void Info(string m) { Console.Error.WriteLine(m); }
        public void Warn(string m) { Console.Error.WriteLine("warning: " + m); }
        public void Error(string m) { Console.Error.WriteLine("error: " + m); }
    }

    static class Program
    {
        static Game game;

        static int Main()
        {
            string endpoint = Environment.GetEnvironmentVariable(Wire.EndpointEnv);
            string token = Environment.GetEnvironmentVariable(Wire.TokenEnv);
            long seed;
            if (!long.TryParse(Environment.GetEnvironmentVariable(Wire.SeedEnv), out seed)) seed = 1;
            game = new Game(seed);
            if (string.IsNullOrEmpty(endpoint) || string.IsNullOrEmpty(token))
                return Demo();

            var ctx = new FrameContext();
            SynchronizationContext.SetSynchronizationContext(ctx);
            RegisterScenarios();
            var parts = new EngineParts { Clock = game, Input = game, Frames = game, Scene = null, Random = game, Log = game };
            if (Environment.GetEnvironmentVariable("ARENA_RESETS") == "1") parts.Reset = game;
            var scene = new SceneProxy();
            parts.Scene = scene;
            var adapter = new Adapter(new AdapterOptions { GameId = "csharp-arena", GameName = "C# Arena", Build = "example" }, parts);
            string ended = null;
            adapter.Disconnected += why => ended = why;
            adapter.Start(endpoint, token);

            var clock = Stopwatch.StartNew();
            double next = 0;
            var wakes = new WaitHandle[] { adapter.Wake, ctx.Posted };
            while (ended == null)
            {
                adapter.BeginFrame();
                ctx.Run();
                game.Holding = game.HoldNext;
                if (!game.Holding) game.World.Step(game.Input());
                adapter.EndFrame();
                // Pacing: as fast as it goes (fps 0), else that rate; a held
                // game wakes at once for a message.
                double fps = game.Fps;
                if (fps <= 0) { next = clock.Elapsed.TotalMilliseconds; continue; }
                double period = 1000.0 / fps;
                double now = clock.Elapsed.TotalMilliseconds;
                if (next == 0 || now - next > 4 * period) next = now;
                next += period;
                int wait = (int)Math.Max(0, next - now);
                if (game.HoldNext) { if (WaitHandle.WaitAny(wakes, wait) != WaitHandle.WaitTimeout) next = 0; }
                else if (wait > 0) Thread.Sleep(wait);
            }
            Console.Error.WriteLine("arena: " + ended + "; quitting");
            // Quit now, as a player does: Mono's shutdown would wait for the
            // socket's last read on a worker thread.
            Environment.Exit(adapter.EndReason != null && adapter.EndReason.Contains("rejected") ? 1 : 0);
            return 0;
        }

        // Without a controller: the autopilot plays a few seconds.
        static int Demo()
        {
            Console.Error.WriteLine("arena: CAPPY_ENDPOINT is not set: crosscode-mcp launches this game; playing 5 s with the autopilot");
            for (int i = 0; i < 300 && !game.World.Over; i++) game.World.Step(game.World.Autopilot());
            Console.Error.WriteLine("arena: wave " + game.World.State.wave + ", " + game.World.State.foesDown + " foes down");
            return 0;
        }

        // The scene is the world of the moment (a reset makes a new one).
        sealed class SceneProxy : ISceneGraph
        {
            public IList<ISceneNode> Roots() { return game.World.Roots(); }
            public string SceneName { get { return game.World.SceneName; } }
            public int Generation { get { return game.Worlds; } }
        }

        static void RegisterScenarios()
        {
            Cappy.RegisterScenario("waves", new ScenarioInfo { Name = "Waves", Description = "The autopilot fights waves of slimes until the last wave falls or the hero does." }
                .Param("waves", Parameter.Integer(1, 5, 2, "how many waves"))
                .Param("hp", Parameter.Integer(1, 500, 100, "the hero's hit points")), Waves);
            Cappy.RegisterScenario("boss", new ScenarioInfo { Name = "Golem", Description = "The autopilot fights the golem, which calls slimes at each phase." }
                .Param("difficulty", Parameter.Integer(1, 3, 2)), Boss);
            Cappy.RegisterScenario("stall", new ScenarioInfo { Name = "Stall", Description = "The game's main thread is busy (a long load) for ms of wall time, then the scenario completes." }
                .Param("ms", Parameter.Integer(0, 20000, 5000)), Stall);
        }

        static void Fresh(Operation op, long seedValue)
        {
            game.Restart(seedValue, delegate { });
        }

        static IEnumerator Waves(Operation op)
        {
            Fresh(op, 1);
            game.World.Waves = (int)(double)op.Parameters["waves"];
            var h = game.World.Hero.Get<Health>();
            h.hp = h.max = (int)(double)op.Parameters["hp"];
            return Fight(op);
        }

        static IEnumerator Boss(Operation op)
        {
            Fresh(op, 1);
            game.World.AddBoss((int)(double)op.Parameters["difficulty"]);
            return Fight(op);
        }

        static IEnumerator Fight(Operation op)
        {
            game.Scripted = true;
            op.Ended += delegate { game.Scripted = false; };
            while (!game.World.Over)
            {
                yield return null;
            }
            op.Summary["outcome"] = game.World.State.outcome;
            op.Summary["wave"] = game.World.State.wave;
            if (game.World.State.outcome == "defeat") op.Fail("HERO_DOWN", "the hero fell in wave " + game.World.State.wave);
        }

        static IEnumerator Stall(Operation op)
        {
            op.Emit("STALL_BEGIN");
            yield return null;
            Thread.Sleep((int)(double)op.Parameters["ms"]); // the main thread is busy: pings must still be answered
            op.Emit("STALL_END");
            yield return op.Wait(100);
        }
    }
}
