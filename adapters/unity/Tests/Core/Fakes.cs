using System;
using System.Collections.Generic;
using System.Linq;
using System.Threading;
using NUnit.Framework;

namespace Crosscode.Cappy.Tests
{
    // Stand-ins for an engine and a controller, through the core's own
    // interfaces: what the Unity layer is to the core, a test can be.

    sealed class FakeTransport : ITransport
    {
        readonly List<string> sent = new List<string>();
        public bool Closed;

        public bool Send(string text)
        {
            lock (sent) sent.Add(text);
            return !Closed;
        }

        public void Close(string reason) { Closed = true; }

        public List<JsonObject> Messages()
        {
            lock (sent) return sent.Select(s => (JsonObject)Json.Parse(s)).ToList();
        }

        public List<JsonObject> OfType(string type)
        {
            return Messages().Where(m => (string)m["type"] == type).ToList();
        }

        public List<string> Types()
        {
            return Messages().Select(m => (string)m["type"]).ToList();
        }

        public JsonObject Last(string type)
        {
            var l = OfType(type);
            Assert.IsNotEmpty(l, "no " + type + " was sent; sent: " + string.Join(" ", Types().ToArray()));
            return l[l.Count - 1];
        }

        public void Clear() { lock (sent) sent.Clear(); }
    }

    sealed class FakeClock : IGameClock
    {
        public double StepMs { get { return 20; } }
        public bool Holding = true;
        public double Fps = -1;
        public int HoldCalls;
        public void Hold(bool hold) { Holding = hold; HoldCalls++; }
        public void Pace(double framesPerSecond) { Fps = framesPerSecond; }
    }

    sealed class FakeInput : IGameInput
    {
        public readonly List<string> Applied = new List<string>(); // "ticks run so far:changes"
        public readonly Dictionary<string, InputValue> Held = new Dictionary<string, InputValue>();
        public readonly Dictionary<string, InputValue> Player = new Dictionary<string, InputValue>();
        public bool AgentOnlyOn;
        public int Releases;
        public Func<long> Frame = () => 0;

        public IList<GameAction> Actions()
        {
            return new List<GameAction>
            {
                new GameAction("move", ActionKind.Axis2D, "walk"),
                new GameAction("jump", ActionKind.Button, "jump"),
                new GameAction("pointer", ActionKind.Pointer, "the mouse"),
            };
        }

        public void Apply(IList<InputValue> changes)
        {
            foreach (var c in changes) Held[c.Name] = c.Clone();
            Applied.Add(Frame() + ":" + string.Join(",", changes.Select(c => c.ToString()).ToArray()));
        }

        public void ReleaseAll() { Held.Clear(); Releases++; }
        public void AgentOnly(bool on) { AgentOnlyOn = on; }

        public void Sample(IDictionary<string, InputValue> into)
        {
            foreach (var kv in Player) into[kv.Key] = kv.Value.Clone();
        }
    }

    // Pictures that complete when the test says (or at once).
    sealed class FakeFrames : IFrameSource
    {
        public bool Immediate = true;
        public int InFlightMax = 1;
        public readonly List<Action> Pending = new List<Action>();
        public int Captures;
        public Func<string> Label = () => "";
        public bool Available { get { return true; } }
        public int ScreenWidth { get { return 320; } }
        public int ScreenHeight { get { return 180; } }
        public int MaxInFlight { get { return InFlightMax; } }
        public bool CanEncode(string mime) { return mime == Wire.MimePng; }

        public void Capture(int maxWidth, string mime, int quality, Action<EncodedPicture> done)
        {
            Captures++;
            int w = Math.Min(maxWidth, ScreenWidth), h = ScreenHeight * w / ScreenWidth;
            var pic = new EncodedPicture { Data = Png(w, h), Mime = Wire.MimePng, Width = w, Height = h };
            if (Immediate) done(pic);
            else Pending.Add(() => done(pic));
        }

        public void CompleteAll()
        {
            var p = Pending.ToArray();
            Pending.Clear();
            foreach (var a in p) a();
        }

        // A PNG header is all the core reads of a picture.
        public static byte[] Png(int w, int h)
        {
            var b = new byte[33];
            new byte[] { 0x89, (byte)'P', (byte)'N', (byte)'G', 13, 10, 26, 10, 0, 0, 0, 13, (byte)'I', (byte)'H', (byte)'D', (byte)'R' }.CopyTo(b, 0);
            b[16] = (byte)(w >> 24); b[17] = (byte)(w >> 16); b[18] = (byte)(w >> 8); b[19] = (byte)w;
            b[20] = (byte)(h >> 24); b[21] = (byte)(h >> 16); b[22] = (byte)(h >> 8); b[23] = (byte)h;
            return b;
        }
    }

    sealed class FakeRandom : IGameRandom
    {
        public readonly List<long> Seeds = new List<long>();
        public void Seed(long seed) { Seeds.Add(seed); }
    }

    sealed class FakeLog : ICappyLog
    {
        public readonly List<string> Lines = new List<string>();
        public void Info(string m) { lock (Lines) Lines.Add("info " + m); }
        public void Warn(string m) { lock (Lines) Lines.Add("warn " + m); }
        public void Error(string m) { lock (Lines) Lines.Add("error " + m); }
    }

    // A game whose frames the test runs one by one: the engine's loop.
    sealed class Rig
    {
        public readonly FakeTransport Wire = new FakeTransport();
        public readonly FakeClock Clock = new FakeClock();
        public readonly FakeInput Input = new FakeInput();
        public readonly FakeFrames Frames = new FakeFrames();
        public readonly FakeRandom Random = new FakeRandom();
        public readonly FakeLog Log = new FakeLog();
        public readonly Adapter Adapter;
        public long FramesRun, TicksRun;

        public Rig(Action<EngineParts> configure = null)
        {
            var parts = new EngineParts { Clock = Clock, Input = Input, Frames = Frames, Random = Random, Log = Log };
            if (configure != null) configure(parts);
            Adapter = new Adapter(new AdapterOptions { GameId = "test-game", GameName = "Test" }, parts);
            Input.Frame = () => TicksRun;
            Adapter.Start(Wire, "tok");
        }

        /// <summary>One frame: begin, the game's update (a tick when not held), end.</summary>
        public void Frame()
        {
            Adapter.BeginFrame();
            FramesRun++;
            if (!Clock.Holding) TicksRun++;
            Adapter.EndFrame();
        }

        public void Run(int n)
        {
            for (int i = 0; i < n; i++) Frame();
        }

        /// <summary>Handshake: the first frame sends hello; welcome comes back.</summary>
        public void Welcome(string extra = "")
        {
            Frame();
            Assert.AreEqual("hello", Wire.Types()[0]);
            Adapter.Receive("{\"type\":\"welcome\",\"protocol\":1,\"controller\":{\"name\":\"cappy\",\"version\":\"1\"}" + extra + "}");
            Frame();
        }

        public void Send(string json)
        {
            Adapter.Receive(json);
        }

        /// <summary>Runs frames until the predicate holds (at most n).</summary>
        public void Until(Func<bool> done, int n = 2000)
        {
            for (int i = 0; i < n && !done(); i++) Frame();
            Assert.IsTrue(done(), "not done after " + n + " frames; sent: " + string.Join(" ", Wire.Types().ToArray()));
        }
    }
}
