using System;
using System.Collections;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Crosscode.Cappy
{
    /// <summary>How an adapter names itself and the game.</summary>
    public sealed class AdapterOptions
    {
        /// <summary>The adapter's name in hello.</summary>
        public string AdapterName = "cappy-csharp";
        /// <summary>The adapter's version in hello.</summary>
        public string AdapterVersion = Adapter.Version;
        /// <summary>The game's id (required).</summary>
        public string GameId;
        /// <summary>The game's name (optional).</summary>
        public string GameName;
        /// <summary>The build's identity (optional).</summary>
        public string Build;
        /// <summary>Whether the controller may inspect the scene (with a scene).</summary>
        public bool Inspect = true;
        /// <summary>Where replays over 1 MiB are written (default: the temp folder's cappy-replays).</summary>
        public string ReplayDir;
        /// <summary>The JPEG quality of frames, 1 to 100.</summary>
        public int JpegQuality = 80;
        /// <summary>Frames a second while the game is held.</summary>
        public double HeldFps = 60;
    }

    /// <summary>
    /// The Cappy adapter: the whole protocol, with no engine type. The
    /// engine calls <see cref="BeginFrame"/> at the start of each frame,
    /// before the game's update, and <see cref="EndFrame"/> at its end,
    /// after the game's update and rendering, both on the main thread. The
    /// adapter reads the socket on a thread of its own (it answers ping,
    /// sends the registry and answers list_scenarios there, so a busy main
    /// thread never fails liveness) and queues the rest for the main thread.
    /// </summary>
    /// <remarks>
    /// Time: the game runs in frames of a fixed step (<see cref="IGameClock.StepMs"/>);
    /// the adapter holds it (no game time passes) from its first frame until
    /// an operation runs it, between an agent's steps and after each
    /// operation. Every change of state happens at a frame's end and takes
    /// effect in the next frame, so a frame is always whole. Operation time
    /// is the count of frames run since it started: a recording and its
    /// replay run the very same frames, with the same input in each, at any
    /// timeScale (which only changes how fast frames are shown and t).
    /// </remarks>
    public sealed class Adapter
    {
        /// <summary>The core's version.</summary>
        public const string Version = "0.1.0";

        readonly AdapterOptions options;
        readonly EngineParts parts;
        readonly ConcurrentQueue<object> queue = new ConcurrentQueue<object>();
        readonly AutoResetEvent wake = new AutoResetEvent(false);
        readonly object sendGate = new object();
        readonly ConfigEvents configEvents = new ConfigEvents();
        readonly List<PictureRequest> pictures = new List<PictureRequest>(); // in request order; guarded by itself
        readonly object deliverGate = new object();

        ITransport transport;
        string endpoint, token;
        int state; // 0 idle, 1 waiting for the first frame's end, 2 hello sent, 3 welcomed, 4 ended
        DateTime helloAt;
        string registryText, actionsText;
        int registryVersion = -1;
        List<string> capabilities = new List<string>();
        List<GameAction> declared = new List<GameAction>();
        long frame;

        // Time.
        bool ranThisFrame, runNext;

        // The operation: prepared (waiting for start) or running.
        Operation op;
        bool launched, armed, armPending, resetting, stopPending;
        Finish finishing;
        FramesRequest framesReq;
        string mime;
        FramePacer pacer;
        int pictureWidth, quality;
        long handledTick = -1;
        readonly List<PictureRequest> wanted = new List<PictureRequest>();
        int framesSent, framesDropped;
        Action<bool> camera;

        // Recordings and replays.
        Recording rec, replay;
        int nextInput, nextStepEnd;
        readonly Dictionary<string, InputValue> lastSample = new Dictionary<string, InputValue>();
        readonly Dictionary<string, InputValue> sample = new Dictionary<string, InputValue>();

        // Agent play.
        string stepId;
        PendingStep step;
        bool stepRunning, picturePending;
        long stepEnd;
        double goalMs;
        readonly List<InputValue> deferred = new List<InputValue>();

        sealed class PendingStep
        {
            public string Id;
            public double Ms;
            public List<InputValue> Changes;
        }

        sealed class Finish
        {
            public string Status, Code, Message;
            public JsonObject Replay;
            public DateTime Deadline;
        }

        sealed class PictureRequest
        {
            public Operation Op;
            public double T;
            public string Reason;
            public string SteppedId; // sent after the picture: a step's answer
            public double SteppedT, SteppedSimT;
            public int Quality;
            public bool Done;
            public EncodedPicture Picture;
        }

        sealed class MainAction
        {
            public Action Run;
        }

        /// <summary>An adapter for a game; parts.Clock is required.</summary>
        public Adapter(AdapterOptions options, EngineParts parts)
        {
            if (options == null || string.IsNullOrEmpty(options.GameId)) throw new ArgumentException("AdapterOptions.GameId is required");
            if (parts == null || parts.Clock == null) throw new ArgumentException("EngineParts.Clock is required");
            this.options = options;
            this.parts = parts;
            configEvents.Fire = OnConfigEvent;
        }

        /// <summary>The operation running now (started), or null.</summary>
        public Operation Current { get { return launched ? op : null; } }
        /// <summary>Whether the controller welcomed this game.</summary>
        public bool Welcomed { get { return Volatile.Read(ref state) == 3; } }
        /// <summary>Whether the connection ended (closed, refused or lost).</summary>
        public bool Ended { get { return Volatile.Read(ref state) == 4; } }
        /// <summary>Why the connection ended.</summary>
        public string EndReason { get; private set; }
        /// <summary>The capabilities hello listed.</summary>
        public IList<string> Capabilities { get { return capabilities; } }
        /// <summary>Whether the game is held (no game time passes in the next frame).</summary>
        public bool Held { get { return !runNext; } }
        /// <summary>Signalled when a message or a picture arrives: a game loop pacing a held game may wake on it.</summary>
        public WaitHandle Wake { get { return wake; } }

        /// <summary>Called on the main thread when the connection ends, with why.</summary>
        public event Action<string> Disconnected;

        /// <summary>
        /// Connects to the controller at endpoint with token once the first
        /// frame ends (the first scene is there, and what its Awake and Start
        /// registered is in the registry). Until then, and between
        /// operations, the game is held.
        /// </summary>
        public void Start(string endpoint, string token)
        {
            this.endpoint = endpoint;
            this.token = token;
            Cappy.Adapter = this;
            state = 1;
            Hold();
        }

        /// <summary>
        /// Uses transport instead of a WebSocket (tests): hello goes through
        /// it at the first frame's end; feed the controller's messages to
        /// <see cref="Receive"/>.
        /// </summary>
        public void Start(ITransport transport, string token)
        {
            this.transport = transport;
            Start((string)null, token);
        }

        /// <summary>Closes the connection (the operation in progress is cancelled).</summary>
        public void Close()
        {
            if (op != null) Teardown("cancelled");
            var t = transport;
            if (t != null) t.Close("adapter stopping");
            EndConnection("the adapter was closed");
        }

        void Log(int level, string m)
        {
            var l = parts.Log;
            if (l == null) return;
            if (level == 0) l.Info("Cappy: " + m);
            else if (level == 1) l.Warn("Cappy: " + m);
            else l.Error("Cappy: " + m);
        }

        // ---- the socket's thread ----

        /// <summary>
        /// One message from the controller, on the thread that reads the
        /// socket: ping, welcome's registry and list_scenarios are answered
        /// here; the rest waits for the main thread.
        /// </summary>
        public void Receive(string text)
        {
            JsonObject m;
            try { m = Json.Parse(text) as JsonObject; }
            catch (FormatException e) { Log(1, "ignoring a message that is not JSON: " + e.Message); return; }
            if (m == null) { Log(1, "ignoring a message that is not an object"); return; }
            string type = Json.Str(m, "type");
            switch (type)
            {
                case "ping":
                    var pong = new JsonObject();
                    pong["type"] = "pong";
                    pong["nonce"] = m["nonce"];
                    Send(pong);
                    return;
                case "welcome":
                    lock (sendGate)
                    {
                        if (Volatile.Read(ref state) == 2 && Json.Number(m, "protocol") == Wire.ProtocolVersion)
                        {
                            state = 3;
                            SendText(registryText);
                            if (actionsText != null) SendText(actionsText);
                        }
                    }
                    break;
                case "list_scenarios":
                    lock (sendGate)
                        if (state == 3) SendText(registryText);
                    return;
            }
            queue.Enqueue(m);
            wake.Set();
        }

        /// <summary>The transport's end (on any thread).</summary>
        public void Closed(string why)
        {
            queue.Enqueue(new MainAction { Run = delegate { Lost(why); } });
            wake.Set();
        }

        bool Send(JsonObject m)
        {
            return SendText(Json.Write(m));
        }

        bool SendText(string text)
        {
            var t = transport;
            return t != null && t.Send(text);
        }

        void Post(Action a)
        {
            queue.Enqueue(new MainAction { Run = a });
            wake.Set();
        }

        // ---- the main thread ----

        /// <summary>
        /// The start of a frame, before the game's update: counts the step
        /// this frame runs, then handles what the controller sent.
        /// </summary>
        public void BeginFrame()
        {
            frame++;
            ranThisFrame = runNext;
            if (op != null && armed && ranThisFrame && finishing == null)
            {
                op.Ticks++;
                op.ReleaseDelays();
            }
            else if (op != null && launched && op.Kind == "scenario" && ranThisFrame && finishing == null)
            {
                op.Ticks++;
                op.ReleaseDelays();
            }
            Drain();
        }

        void Drain()
        {
            object item;
            int n = 0;
            while (n++ < 10000 && queue.TryDequeue(out item))
            {
                var a = item as MainAction;
                try
                {
                    if (a != null) a.Run();
                    else Handle((JsonObject)item);
                }
                catch (Exception e)
                {
                    Log(2, "handling a message: " + e);
                }
            }
        }

        /// <summary>
        /// The end of a frame, after the game's update and rendering:
        /// connects (the first time), takes pictures, begins and ends
        /// steps, puts a replay's input in for the next frame, and decides
        /// whether the next frame runs.
        /// </summary>
        public void EndFrame()
        {
            if (state == 1) Connect();
            if (state == 2 && (DateTime.UtcNow - helloAt).TotalSeconds > 10)
                Shut("no welcome from the controller within 10 s");
            Drain();
            if (state == 3 || state == 2) RefreshRegistry();
            bool run = false;
            double pace = options.HeldFps;
            if (op != null && launched)
            {
                ResolveEvents(false);
                try { run = Step(out pace); }
                catch (Exception e)
                {
                    Log(2, "the operation failed: " + e);
                    End(op, "failed", Codes.AdapterError, e.Message);
                    run = false;
                    pace = options.HeldFps;
                }
            }
            if (finishing != null) { run = false; TryFinish(); }
            SetRun(run, pace);
        }

        void SetRun(bool run, double pace)
        {
            if (run != runNext || frame <= 1) parts.Clock.Hold(!run);
            runNext = run;
            parts.Clock.Pace(run ? pace : options.HeldFps);
        }

        void Hold()
        {
            runNext = false;
            parts.Clock.Hold(true);
            parts.Clock.Pace(options.HeldFps);
        }

        // The operation's part of a frame's end; whether the next frame runs.
        bool Step(out double pace)
        {
            pace = options.HeldFps;
            if (finishing != null) return false;
            double realTime = 1000.0 / parts.Clock.StepMs * op.TimeScale;
            if (op.Kind == "scenario")
            {
                RateFrame(ranThisFrame || handledTick < 0);
                CheckScenario();
                pace = realTime;
                return op != null && finishing == null && Flush(false);
            }
            if (!armed)
            {
                if (armPending && !resetting)
                {
                    armPending = false;
                    Arm();
                }
                else return false;
            }
            if (op.Control == "agent" && op.Kind == "recording")
            {
                pace = 0;
                return AgentTick();
            }
            if (op.Kind == "replay")
            {
                pace = 0;
                return ReplayTick();
            }
            pace = realTime;
            return PlayerTick();
        }

        // ---- handshake ----

        void Connect()
        {
            state = 2;
            helloAt = DateTime.UtcNow;
            BuildRegistry();
            BuildActions();
            capabilities = CapabilityList();
            var hello = new JsonObject();
            hello["type"] = "hello";
            var pv = new JsonObject();
            pv["min"] = Wire.ProtocolVersion;
            pv["max"] = Wire.ProtocolVersion;
            hello["protocol"] = pv;
            hello["token"] = token ?? "";
            var ad = new JsonObject();
            ad["name"] = options.AdapterName;
            ad["version"] = options.AdapterVersion;
            hello["adapter"] = ad;
            var game = new JsonObject();
            game["id"] = options.GameId;
            if (!string.IsNullOrEmpty(options.GameName)) game["name"] = options.GameName;
            hello["game"] = game;
            if (!string.IsNullOrEmpty(options.Build)) hello["build"] = options.Build;
            hello["capabilities"] = capabilities;
            string text = Json.Write(hello);
            if (transport != null)
            {
                transport.Send(text);
                return;
            }
            Uri uri;
            if (!Uri.TryCreate(endpoint ?? "", UriKind.Absolute, out uri) || (uri.Scheme != "ws" && uri.Scheme != "wss"))
            {
                Shut("the endpoint \"" + endpoint + "\" is not a ws:// URL");
                return;
            }
            var c = new Connection(parts.Log);
            c.OnMessage = Receive;
            c.OnClosed = Closed;
            transport = c;
            c.OpenAsync(uri, TimeSpan.FromSeconds(10), text).ContinueWith(t =>
            {
                if (t.IsFaulted || t.IsCanceled)
                {
                    var e = t.Exception == null ? null : t.Exception.GetBaseException();
                    Closed("cannot connect to " + endpoint + (e == null ? "" : ": " + e.Message));
                }
            });
        }

        List<string> CapabilityList()
        {
            var caps = new List<string>();
            if (Cappy.Scenarios().Count > 0) caps.Add(Capability.Scenarios);
            caps.Add(Capability.FreeformRecording);
            caps.Add(Capability.Replay);
            caps.Add(Capability.TimeScale);
            if (parts.Random != null) caps.Add(Capability.Seed);
            if (parts.Input != null) caps.Add(Capability.Input);
            if (parts.Scene != null && options.Inspect) caps.Add(Capability.Inspect);
            if (parts.Scene != null) caps.Add(Capability.ConfigEvents);
            if (parts.Frames != null && parts.Frames.Available) caps.Add(Capability.Frames);
            if (parts.Reset != null) caps.Add(Capability.ResetsItself);
            if (Cappy.CameraNames().Count > 0) caps.Add(Capability.AlternateCameras);
            return caps;
        }

        bool Has(string cap) { return capabilities.Contains(cap); }

        void BuildRegistry()
        {
            int v = Cappy.Version;
            var list = new List<object>();
            foreach (var s in Cappy.Scenarios())
            {
                var o = new JsonObject();
                o["id"] = s.Id;
                if (!string.IsNullOrEmpty(s.Info.Name)) o["name"] = s.Info.Name;
                if (!string.IsNullOrEmpty(s.Info.Description)) o["description"] = s.Info.Description;
                if (s.Info.Parameters.Count > 0)
                {
                    var ps = new JsonObject();
                    foreach (var kv in s.Info.Parameters) ps[kv.Key] = kv.Value.ToJson();
                    o["parameters"] = ps;
                }
                o["requiredCapabilities"] = new List<object> { Capability.Scenarios };
                list.Add(o);
            }
            var m = new JsonObject();
            m["type"] = "scenarios";
            m["scenarios"] = list;
            lock (sendGate)
            {
                registryText = Json.Write(m);
                registryVersion = v;
            }
        }

        void BuildActions()
        {
            if (parts.Input == null) return;
            List<GameAction> acts;
            try
            {
                acts = new List<GameAction>(parts.Input.Actions());
                Checks.Actions(acts);
            }
            catch (Exception e)
            {
                Log(2, "the game's actions: " + e.Message);
                return;
            }
            var list = new List<object>();
            foreach (var a in acts)
            {
                var o = new JsonObject();
                o["name"] = a.Name;
                o["kind"] = a.Kind;
                if (!string.IsNullOrEmpty(a.Description)) o["description"] = a.Description;
                list.Add(o);
            }
            var m = new JsonObject();
            m["type"] = "actions";
            m["actions"] = list;
            string text = Json.Write(m);
            lock (sendGate)
            {
                if (text == actionsText) return;
                declared = acts;
                actionsText = text;
                if (state == 3) SendText(text);
            }
        }

        // The registry and the actions again when they changed.
        void RefreshRegistry()
        {
            if (Cappy.Version != registryVersion)
            {
                BuildRegistry();
                lock (sendGate)
                    if (state == 3) SendText(registryText);
            }
            if (op == null && frame % 60 == 0) BuildActions();
        }

        void Shut(string why)
        {
            Log(1, why);
            var t = transport;
            if (t != null) t.Close(why);
            Lost(why);
        }

        void Lost(string why)
        {
            if (state == 4) return;
            if (op != null) Teardown("cancelled");
            EndConnection(why);
            Log(1, why);
            var h = Disconnected;
            if (h != null) h(why);
        }

        void EndConnection(string why)
        {
            lock (sendGate) state = 4;
            if (EndReason == null) EndReason = why;
            if (Cappy.Adapter == this) Cappy.Adapter = null;
            Hold();
        }

        // ---- controller messages, on the main thread ----

        void Handle(JsonObject m)
        {
            string type = Json.Str(m, "type") ?? "";
            string opId = Json.Str(m, "op") ?? "";
            switch (type)
            {
                case "welcome":
                    if (Json.Number(m, "protocol") != Wire.ProtocolVersion)
                    {
                        Shut("the controller welcomed protocol " + Json.Write(m["protocol"]) + "; this adapter speaks " + Wire.ProtocolVersion);
                        return;
                    }
                    configEvents.Set(m["events"]);
                    ResolveEvents(true);
                    Log(0, "welcomed by the controller");
                    return;
                case "reject":
                    Shut("the controller rejected this game: " + Json.Str(m, "code") + ": " + Json.Str(m, "message"));
                    return;
                case "error":
                    Log(1, "controller error " + Json.Str(m, "code") + ": " + Json.Str(m, "message"));
                    if (opId.Length > 0 && op != null && op.Id == opId) Teardown("cancelled");
                    return;
            }
            if (state != 3)
            {
                Log(1, "ignoring " + type + " before welcome");
                return;
            }
            switch (type)
            {
                case "prepare_scenario": PrepareScenario(opId, m); break;
                case "prepare_replay": PrepareReplay(opId, m); break;
                case "record_start": RecordStart(opId, m); break;
                case "start":
                    if (op == null || op.Id != opId) FailRequest(opId, Codes.OutOfState, "operation " + opId + " is not prepared");
                    else if (launched) Log(1, "ignoring a repeated start of " + opId);
                    else Launch();
                    break;
                case "stop":
                    if (op != null && op.Id == opId && launched) StopOp();
                    break;
                case "cancel":
                    if (op != null && op.Id == opId) Teardown("cancelled");
                    break;
                case "step": OnStep(opId, m); break;
                case "inspect": OnInspect(m); break;
                default:
                    Log(1, "ignoring a " + type + " message");
                    break;
            }
        }

        void FailRequest(string opId, string code, string message)
        {
            var f = new JsonObject();
            f["type"] = "failed";
            f["op"] = opId;
            f["code"] = code;
            f["message"] = Checks.Cap(message, 4000);
            Send(f);
        }

        bool Admit(string opId)
        {
            if (opId.Length == 0) { Log(1, "ignoring an operation request without op"); return false; }
            if (op != null)
            {
                FailRequest(opId, Codes.OperationBusy, "operation " + op.Id + " is still active");
                return false;
            }
            return true;
        }

        // Presentation, camera and frames; false (failed sent) when refused.
        bool PrepareCommon(Operation o, JsonObject m)
        {
            object p = m["presentation"];
            if (p != null && !(p is JsonObject)) { FailRequest(o.Id, Codes.PresentationUnsupported, "presentation must be an object"); return false; }
            var pres = (JsonObject)p ?? new JsonObject();
            try { Checks.Presentation(pres, Has); }
            catch (CappyFailure f) { FailRequest(o.Id, f.Code, f.Message); return false; }
            o.Presentation = pres;
            o.TimeScale = Json.Number(pres, "timeScale") ?? 1;
            o.Camera = Json.Str(pres, "camera");
            camera = null;
            if (o.Camera != null)
            {
                camera = Cappy.Camera(o.Camera);
                if (camera == null)
                {
                    FailRequest(o.Id, Codes.UnknownCamera, "no camera \"" + o.Camera + "\"; this game has " + string.Join(", ", Cappy.CameraNames().ToArray()));
                    return false;
                }
            }
            framesReq = null;
            if (m["frames"] != null)
            {
                if (!Has(Capability.Frames))
                {
                    FailRequest(o.Id, Codes.CapabilityMissing, "this game sends no frames (it does not render here)");
                    return false;
                }
                try { framesReq = Checks.Frames(m["frames"]); }
                catch (CappyFailure f) { FailRequest(o.Id, f.Code, f.Message); return false; }
                mime = framesReq.ChooseMime(parts.Frames.CanEncode);
                if (mime == null)
                {
                    FailRequest(o.Id, Codes.CapabilityMissing, "this game encodes none of " + string.Join(", ", framesReq.Formats.ToArray()));
                    framesReq = null;
                    return false;
                }
            }
            o.StepMs = parts.Clock.StepMs;
            return true;
        }

        void PrepareScenario(string opId, JsonObject m)
        {
            if (!Admit(opId)) return;
            string id = Json.Str(m, "scenario") ?? "";
            var entry = Cappy.Scenario(id);
            if (entry == null)
            {
                FailRequest(opId, Codes.ScenarioNotFound, "no scenario \"" + id + "\"");
                return;
            }
            object args = m["parameters"];
            if (args != null && !(args is JsonObject)) { FailRequest(opId, Codes.InvalidParameters, "parameters must be an object"); return; }
            JsonObject resolved;
            try { resolved = Checks.Resolve(id, entry.Info.Parameters, (JsonObject)args); }
            catch (CappyFailure f) { FailRequest(opId, f.Code, f.Message); return; }
            var o = new Operation(this, opId, "scenario") { Scenario = id, Parameters = resolved };
            if (!PrepareCommon(o, m)) return;
            op = o;
            SendState("ready", opId);
        }

        void PrepareReplay(string opId, JsonObject m)
        {
            if (!Admit(opId)) return;
            Recording r;
            try
            {
                r = Recording.Decode(ReplayPayload.Read(m["replay"]));
                if (r.Game != options.GameId) throw new CappyFailure(Codes.ReplayInvalid, "the replay is of the game \"" + r.Game + "\", this is \"" + options.GameId + "\"");
                if (Math.Abs(r.StepMs - parts.Clock.StepMs) > 1e-9)
                    throw new CappyFailure(Codes.ReplayInvalid, "the replay ran frames of " + Fmt.Num(r.StepMs) + " ms, this game runs frames of " + Fmt.Num(parts.Clock.StepMs) + " ms: record it again");
                foreach (var kv in r.Inputs)
                    foreach (var v in kv.Value)
                        if (!declared.Exists(a => a.Name == v.Name && a.Kind == v.Kind))
                            throw new CappyFailure(Codes.ReplayInvalid, "the replay presses " + v.Name + " (" + v.Kind + "), which this game no longer has");
            }
            catch (CappyFailure f) { FailRequest(opId, f.Code, f.Message); return; }
            var o = new Operation(this, opId, "replay") { Control = r.Control };
            if (!PrepareCommon(o, m)) return;
            o.Seed = SeedOf(m, r.Seed);
            replay = r;
            op = o;
            SendState("ready", opId);
        }

        // ready or started.
        bool SendState(string type, string opId)
        {
            var m = new JsonObject();
            m["type"] = type;
            m["op"] = opId;
            return Send(m);
        }

        void RecordStart(string opId, JsonObject m)
        {
            if (!Admit(opId)) return;
            var control = m["control"];
            if (control != null && !"agent".Equals(control))
            {
                FailRequest(opId, Codes.InvalidMessage, "record_start.control must be \"agent\", got " + Json.Write(control));
                return;
            }
            if (control != null && parts.Input == null)
            {
                FailRequest(opId, Codes.CapabilityMissing, "this game cannot be played by an agent (no input capability)");
                return;
            }
            var o = new Operation(this, opId, "recording") { Control = control != null ? "agent" : null };
            if (!PrepareCommon(o, m)) return;
            o.Seed = SeedOf(m, LaunchSeed());
            op = o;
            Launch();
        }

        static long LaunchSeed()
        {
            long s;
            string env = Environment.GetEnvironmentVariable(Wire.SeedEnv);
            return long.TryParse(env, out s) ? s : 1;
        }

        static long SeedOf(JsonObject m, long fallback)
        {
            double? s = Json.Number(m, "seed");
            if (s.HasValue && s.Value == Math.Floor(s.Value) && Math.Abs(s.Value) <= Wire.MaxSeed) return (long)s.Value;
            return fallback;
        }

        // ---- running an operation ----

        void Launch()
        {
            var o = op;
            launched = true;
            o.IsActive = true;
            o.Ticks = 0;
            armed = armPending = resetting = stopPending = false;
            finishing = null;
            handledTick = -1;
            framesSent = framesDropped = 0;
            wanted.Clear();
            pacer = framesReq != null ? new FramePacer(framesReq.Fps) : null;
            quality = Math.Max(1, Math.Min(100, options.JpegQuality));
            pictureWidth = 0;
            if (framesReq != null)
            {
                int sw = Math.Max(1, parts.Frames.ScreenWidth);
                pictureWidth = Math.Min(framesReq.MaxWidth, sw);
            }
            if (!SendState("started", o.Id)) { Teardown("cancelled"); return; }
            if (camera != null) camera(true);
            Cappy.RaiseStarted(o);
            if (o.Kind == "scenario")
            {
                ResolveEvents(true);
                RunScenario(o);
                return;
            }
            if (parts.Random != null) parts.Random.Seed(o.Seed);
            if (parts.Reset != null)
            {
                resetting = true;
                parts.Reset.Restart(o.Seed, delegate
                {
                    if (op != o) return;
                    resetting = false;
                    armPending = true;
                });
            }
            armPending = true;
        }

        void RunScenario(Operation o)
        {
            var entry = Cappy.Scenario(o.Scenario);
            try
            {
                if (entry.Routine != null)
                {
                    var routine = entry.Routine(o);
                    o.RunState = routine;
                    var runner = parts.Runner ?? (ICoroutineRunner)(defaultRunner ?? (defaultRunner = new FrameRunner()));
                    runner.Run(routine, delegate (Exception e) { if (op == o && o.IsActive) ScenarioDone(o, e); });
                }
                else if (entry.Async != null)
                {
                    var task = entry.Async(o);
                    o.RunState = task;
                    if (task == null) ScenarioDone(o, null);
                }
                else entry.Start(o);
            }
            catch (Exception e)
            {
                ScenarioDone(o, e);
            }
        }

        FrameRunner defaultRunner;

        /// <summary>The runner of scenario coroutines when the engine gives none: one MoveNext a frame.</summary>
        internal FrameRunner Runner { get { return defaultRunner; } }

        // A scenario's task or default-runner coroutine, each frame.
        void CheckScenario()
        {
            if (defaultRunner != null) defaultRunner.Tick();
            var o = op;
            if (o == null || !o.IsActive) return;
            var task = o.RunState as Task;
            if (task != null && task.IsCompleted)
                ScenarioDone(o, task.IsFaulted ? task.Exception.GetBaseException() : task.IsCanceled ? new OperationCanceledException() : null);
        }

        void ScenarioDone(Operation o, Exception e)
        {
            if (op != o || !o.IsActive || finishing != null) return;
            if (e == null) { End(o, "completed", null, null); return; }
            var f = e as CappyFailure;
            if (f != null) End(o, "failed", f.Code, f.Message);
            else End(o, "failed", Codes.AdapterError, e.GetType().Name + ": " + e.Message);
        }

        internal void CompleteFromGame(Operation o, object summary)
        {
            if (op != o || !o.IsActive || finishing != null) return;
            if (summary != null) Merge(o.Summary, summary);
            if (o.Kind == "scenario") End(o, "completed", null, null);
        }

        internal void FailFromGame(Operation o, string code, string message)
        {
            if (op != o || !o.IsActive || finishing != null) return;
            End(o, "failed", string.IsNullOrEmpty(code) ? Codes.AdapterError : code, message ?? "");
        }

        static void Merge(JsonObject into, object summary)
        {
            var jo = summary as JsonObject;
            if (jo != null) { foreach (var kv in jo) into[kv.Key] = kv.Value; return; }
            var d = summary as IDictionary;
            if (d != null) { foreach (DictionaryEntry kv in d) into[Convert.ToString(kv.Key)] = kv.Value; return; }
            into["result"] = summary;
        }

        void StopOp()
        {
            op.StopRequested = true;
            op.RaiseStopping();
            if (op.Kind == "scenario") return; // a scenario is cancelled, never stopped
            if (!armed) { FinishRecordingOrReplay(); return; }
            stopPending = true;
        }

        // The start of a recording or replay, at a frame's end: its clock
        // starts at 0, input starts from nothing held.
        void Arm()
        {
            armed = true;
            op.Ticks = 0;
            handledTick = -1;
            ResolveEvents(true);
            if (parts.Random != null) parts.Random.Seed(op.Seed);
            deferred.Clear();
            lastSample.Clear();
            goalMs = 0;
            stepRunning = picturePending = false;
            if (parts.Input != null)
            {
                parts.Input.ReleaseAll();
                parts.Input.AgentOnly(op.Control == "agent" || op.Kind == "replay");
            }
            if (op.Kind == "recording")
            {
                rec = new Recording { Game = options.GameId, Seed = op.Seed, StepMs = parts.Clock.StepMs, Control = op.Control };
            }
            else
            {
                nextInput = 0;
                nextStepEnd = 0;
            }
        }

        // A player's recording: what the player's devices set each frame.
        bool PlayerTick()
        {
            long t = op.Ticks;
            if (parts.Input != null && ranThisFrame && handledTick != t)
            {
                sample.Clear();
                parts.Input.Sample(sample);
                var changes = new List<InputValue>();
                foreach (var kv in sample)
                {
                    InputValue before;
                    if (lastSample.TryGetValue(kv.Key, out before) && before.SameAs(kv.Value)) continue;
                    if (before == null && IsRest(kv.Value)) continue;
                    changes.Add(kv.Value.Clone());
                    lastSample[kv.Key] = kv.Value.Clone();
                }
                if (changes.Count > 0) rec.Inputs.Add(new KeyValuePair<long, List<InputValue>>(t, changes));
            }
            RateFrame(ranThisFrame || handledTick < 0);
            Flush(false);
            if (stopPending)
            {
                FinishRecordingOrReplay();
                return false;
            }
            return true;
        }

        static bool IsRest(InputValue v)
        {
            switch (v.Kind)
            {
                case ActionKind.Button: return v.Pressed != true;
                case ActionKind.Axis: return v.Value == 0;
                case ActionKind.Axis2D: return v.X == 0 && v.Y == 0;
            }
            return false;
        }

        // A replay: the recording's input goes in at the end of the frame
        // before the one that saw it; step pictures where the recording
        // took them; it ends with the recording's last frame.
        bool ReplayTick()
        {
            long t = op.Ticks;
            if (handledTick != t)
            {
                handledTick = t;
                bool stepPic = false;
                while (nextStepEnd < replay.Steps.Count && replay.Steps[nextStepEnd] <= t)
                {
                    if (replay.Steps[nextStepEnd] == t) stepPic = true;
                    nextStepEnd++;
                }
                if (stepPic && framesReq != null) Want(new PictureRequest { Op = op, T = op.PresentedTimeMs, Reason = "step", Quality = quality });
                else RateFrameNow();
            }
            if (!Flush(true)) return false; // held until the pictures of this frame are taken
            if (stopPending || t >= replay.Ticks)
            {
                if (stopPending) op.Summary["stopped"] = true;
                FinishRecordingOrReplay();
                return false;
            }
            var batch = new List<InputValue>();
            while (nextInput < replay.Inputs.Count && replay.Inputs[nextInput].Key <= t + 1)
            {
                batch.AddRange(replay.Inputs[nextInput].Value);
                nextInput++;
            }
            if (batch.Count > 0) parts.Input.Apply(batch);
            return true;
        }

        // Agent play: a running step ends with its last frame; a step
        // waiting begins (its input goes in now, for the next frame).
        bool AgentTick()
        {
            long t = op.Ticks;
            if (wanted.Count > 0 && !Flush(true)) return false;
            if (stopPending)
            {
                FinishRecordingOrReplay();
                return false;
            }
            if (stepRunning)
            {
                if (handledTick != t)
                {
                    handledTick = t;
                    if (t < stepEnd) RateFrameNow();
                }
                if (t >= stepEnd)
                {
                    stepRunning = false;
                    EndStep();
                    return false;
                }
                return Flush(true);
            }
            if (step != null && !picturePending) return BeginStep();
            return false;
        }

        bool BeginStep()
        {
            var s = step;
            step = null;
            long t = op.Ticks;
            long frames = (long)Math.Round((goalMs + s.Ms) / parts.Clock.StepMs, MidpointRounding.AwayFromZero) - t;
            goalMs += s.Ms;
            if (frames <= 0)
            {
                // Apply and look: the input goes in with the next step that runs.
                deferred.AddRange(s.Changes);
                EndStep();
                return false;
            }
            var all = new List<InputValue>(deferred);
            all.AddRange(s.Changes);
            deferred.Clear();
            if (all.Count > 0)
            {
                rec.Inputs.Add(new KeyValuePair<long, List<InputValue>>(t + 1, all));
                parts.Input.Apply(all);
            }
            stepEnd = t + frames;
            stepRunning = true;
            handledTick = t;
            return true;
        }

        // The step is over: its picture (when frames were asked), then stepped.
        void EndStep()
        {
            long t = op.Ticks;
            if (rec.Steps.Count == 0 || rec.Steps[rec.Steps.Count - 1] != t) rec.Steps.Add(t);
            string id = stepId;
            if (framesReq != null)
            {
                picturePending = true;
                if (pacer != null) pacer.Took(op.PresentedTimeMs);
                Want(new PictureRequest { Op = op, T = op.PresentedTimeMs, Reason = "step", SteppedId = id, SteppedT = op.PresentedTimeMs, SteppedSimT = op.SimTimeMs, Quality = quality });
                Flush(true);
                return;
            }
            SendStepped(op, id, op.PresentedTimeMs, op.SimTimeMs);
        }

        void SendStepped(Operation o, string id, double t, double simT)
        {
            if (id == null) return;
            if (op == o && stepId == id) stepId = null;
            var m = new JsonObject();
            m["type"] = "stepped";
            m["op"] = o.Id;
            m["id"] = id;
            m["t"] = Math.Round(t * 1000) / 1000;
            m["simT"] = Math.Round(simT * 1000) / 1000;
            Send(m);
        }

        void OnStep(string opId, JsonObject m)
        {
            string id = Json.Str(m, "id") ?? "";
            if (id.Length == 0) { Log(1, "ignoring a step without id"); return; }
            if (op == null || op.Id != opId || !launched || op.Kind != "recording" || op.Control != "agent" || finishing != null)
            {
                RefuseStep(opId, id, Codes.OutOfState, "no agent-controlled recording " + opId + " is running");
                return;
            }
            if (stepId != null)
            {
                RefuseStep(opId, id, Codes.OperationBusy, "step " + stepId + " is still running");
                return;
            }
            double? ms = Json.Number(m, "ms");
            if (!ms.HasValue || !(ms.Value >= 0 && ms.Value <= Wire.MaxStepMs))
            {
                RefuseStep(opId, id, Codes.InvalidInput, "ms must be a number from 0 to 10000, got " + Json.Write(m["ms"]));
                return;
            }
            List<InputValue> changes;
            try { changes = Checks.StepInputs(m["actions"], declared); }
            catch (CappyFailure f) { RefuseStep(opId, id, f.Code, f.Message); return; }
            foreach (var v in changes)
                if (v.Kind == ActionKind.Pointer) ToScreen(v);
            stepId = id;
            step = new PendingStep { Id = id, Ms = ms.Value, Changes = changes };
        }

        // A pointer in the pixels of the frames the agent sees, to the game's.
        void ToScreen(InputValue v)
        {
            if (parts.Frames == null || pictureWidth <= 0) return;
            double scale = (double)parts.Frames.ScreenWidth / pictureWidth;
            v.X = Math.Min(v.X * scale, parts.Frames.ScreenWidth - 1);
            v.Y = Math.Min(v.Y * scale, parts.Frames.ScreenHeight - 1);
        }

        void RefuseStep(string opId, string id, string code, string message)
        {
            var r = new JsonObject();
            r["type"] = "step_refused";
            r["op"] = opId;
            r["id"] = id;
            r["code"] = code;
            r["message"] = Checks.Cap(message, 4000);
            Send(r);
        }

        // ---- frames ----

        // A rate frame at this frame's presented time, once per tick.
        void RateFrame(bool ticked)
        {
            if (!ticked || handledTick == op.Ticks) return;
            handledTick = op.Ticks;
            RateFrameNow();
        }

        void RateFrameNow()
        {
            if (pacer == null) return;
            double t = op.PresentedTimeMs;
            if (!pacer.Due(t)) return;
            pacer.Took(t);
            Want(new PictureRequest { Op = op, T = t, Quality = quality });
        }

        internal void ExtraFrame(Operation o, string reason)
        {
            if (o != op || !launched || pacer == null || finishing != null) return;
            double t = o.PresentedTimeMs;
            if (!pacer.Extra(t)) { framesDropped++; return; }
            Want(new PictureRequest { Op = o, T = t, Reason = Checks.Cap(reason, Wire.MaxEventNameBytes), Quality = quality });
        }

        void Want(PictureRequest r)
        {
            wanted.Add(r);
        }

        int InFlight()
        {
            lock (pictures) return pictures.Count;
        }

        // Asks for the pictures wanted: true when none waits. A waiting
        // operation (flat out: steps and replays) holds the game until they
        // are taken; a real-time one drops rate frames it has no room for.
        bool Flush(bool wait)
        {
            int max = parts.Frames == null ? 1 : Math.Max(1, parts.Frames.MaxInFlight);
            while (wanted.Count > 0 && InFlight() < max)
            {
                var r = wanted[0];
                wanted.RemoveAt(0);
                Request(r);
            }
            if (wanted.Count == 0) return true;
            if (wait) return false;
            for (int i = wanted.Count - 1; i >= 0; i--)
                if (wanted[i].SteppedId == null) { wanted.RemoveAt(i); framesDropped++; }
            return wanted.Count == 0;
        }

        void Request(PictureRequest r)
        {
            lock (pictures) pictures.Add(r);
            int maxWidth = pictureWidth;
            string m = mime;
            try
            {
                parts.Frames.Capture(maxWidth, m, r.Quality, delegate (EncodedPicture pic) { PictureDone(r, pic); });
            }
            catch (Exception e)
            {
                Log(1, "taking a picture: " + e.Message);
                PictureDone(r, null);
            }
        }

        // On any thread: sends the pictures that are done, in request
        // order. A picture leaves the list only once it is sent, so an
        // outcome never overtakes it.
        void PictureDone(PictureRequest r, EncodedPicture pic)
        {
            lock (deliverGate)
            {
                lock (pictures)
                {
                    r.Picture = pic;
                    r.Done = true;
                }
                while (true)
                {
                    PictureRequest head;
                    lock (pictures)
                    {
                        if (pictures.Count == 0 || !pictures[0].Done) break;
                        head = pictures[0];
                    }
                    try { Deliver(head); }
                    finally { lock (pictures) pictures.Remove(head); }
                }
            }
            wake.Set();
        }

        void Deliver(PictureRequest r)
        {
            string why = PictureCheck.Why(r.Picture, mime, pictureWidth);
            if (why == null && r.Op.IsActive)
            {
                var f = new StringBuilder(r.Picture.Data.Length * 4 / 3 + 256);
                f.Append("{\"type\":\"frame\",\"op\":");
                Json.WriteString(f, r.Op.Id);
                f.Append(",\"t\":");
                Json.WriteNumber(f, Math.Round(r.T * 1000) / 1000);
                f.Append(",\"mime\":");
                Json.WriteString(f, r.Picture.Mime);
                f.Append(",\"width\":").Append(r.Picture.Width).Append(",\"height\":").Append(r.Picture.Height);
                f.Append(",\"data\":\"").Append(Convert.ToBase64String(r.Picture.Data)).Append('"');
                if (!string.IsNullOrEmpty(r.Reason)) { f.Append(",\"reason\":"); Json.WriteString(f, r.Reason); }
                f.Append('}');
                if (SendText(f.ToString())) Interlocked.Increment(ref framesSent);
            }
            else if (r.Op.IsActive)
            {
                if (r.SteppedId != null && r.Quality > 20 && r.Picture != null && r.Picture.Mime == Wire.MimeJpeg && r.Picture.Data != null && r.Picture.Data.Length > Wire.MaxFrameBytes)
                {
                    // Too large: the game is held, so take the same picture again, smaller.
                    Post(delegate { Retry(r); });
                    return;
                }
                Log(1, "dropping a frame: " + why);
                Interlocked.Increment(ref framesDropped);
            }
            if (r.SteppedId != null && r.Op.IsActive)
            {
                var o = r.Op;
                string id = r.SteppedId;
                Post(delegate { if (op == o) picturePending = false; });
                SendStepped(o, id, r.SteppedT, r.SteppedSimT);
            }
        }

        void Retry(PictureRequest r)
        {
            if (op != r.Op || !launched) return;
            var again = new PictureRequest { Op = r.Op, T = r.T, Reason = r.Reason, SteppedId = r.SteppedId, SteppedT = r.SteppedT, SteppedSimT = r.SteppedSimT, Quality = r.Quality > 50 ? 50 : 20 };
            Want(again);
            Flush(true);
        }

        // ---- events ----

        internal bool EmitEvent(Operation o, string name, object payload, double? durationMs)
        {
            if (o != op || !launched || !o.IsActive || finishing != null) return false;
            string why = Checks.Text(name, Wire.MaxEventNameBytes, true);
            if (why != null) throw new ArgumentException("event name: " + why);
            if (durationMs.HasValue && !(durationMs.Value >= 0 && durationMs.Value < double.PositiveInfinity)) throw new ArgumentException("durationMs must be a finite number of at least 0");
            var p = new JsonObject();
            if (payload != null)
            {
                var jo = payload as JsonObject;
                var d = payload as IDictionary;
                if (jo != null) foreach (var kv in jo) p[kv.Key] = kv.Value;
                else if (d != null) foreach (DictionaryEntry kv in d) p[Convert.ToString(kv.Key)] = kv.Value;
                else
                {
                    var parsed = Json.Parse(new Inspect.ValueWriter(null).Write(payload)) as JsonObject;
                    if (parsed == null) throw new ArgumentException("an event's payload must be an object");
                    foreach (var kv in parsed) p[kv.Key] = kv.Value;
                }
            }
            p["simT"] = Math.Round(o.SimTimeMs * 1000) / 1000;
            double t = Math.Round(o.PresentedTimeMs * 1000) / 1000;
            if (t < o.LastT) t = o.LastT;
            var sb = new StringBuilder(128);
            sb.Append("{\"type\":\"event\",\"op\":");
            Json.WriteString(sb, o.Id);
            sb.Append(",\"t\":");
            Json.WriteNumber(sb, t);
            sb.Append(",\"event\":");
            Json.WriteString(sb, name);
            if (durationMs.HasValue) { sb.Append(",\"durationMs\":"); Json.WriteNumber(sb, durationMs.Value); }
            sb.Append(",\"payload\":");
            Json.Write(sb, p);
            sb.Append('}');
            if (!SendText(sb.ToString())) return false;
            o.LastT = t;
            o.Events++;
            return true;
        }

        void OnConfigEvent(string name, object[] args)
        {
            var o = op;
            if (o == null || !launched || !o.IsActive) return;
            var convert = parts.Scene as IValueConverter;
            var list = new List<object>();
            foreach (var a in args) list.Add(new JsonRaw(new Inspect.ValueWriter(convert == null ? null : (Func<object, object>)convert.Convert).Write(a)));
            var p = new JsonObject();
            p["args"] = list;
            EmitEvent(o, name, p, null);
        }

        // The capture config's events: connected again when the scene's
        // objects were replaced, and now and then while an operation runs
        // (objects come and go).
        void ResolveEvents(bool now)
        {
            if (parts.Scene == null || !configEvents.Any) return;
            int g = parts.Scene.Generation;
            if (!now && g == sceneGeneration && frame % 30 != 0) return;
            sceneGeneration = g;
            configEvents.Resolve(parts.Scene);
        }

        int sceneGeneration;

        // ---- inspect ----

        void OnInspect(JsonObject m)
        {
            string id = Json.Str(m, "id") ?? "";
            if (id.Length == 0) { Log(1, "ignoring an inspect without id"); return; }
            string value = null;
            CappyFailure error = null;
            if (parts.Scene == null || !options.Inspect) error = new CappyFailure(Codes.CapabilityMissing, "this game does not answer inspect");
            else if (m["query"] != null && !(m["query"] is string)) error = new CappyFailure(Codes.InvalidQuery, "query must be a string");
            else
            {
                try
                {
                    var convert = parts.Scene as IValueConverter;
                    value = Inspect.Answer(parts.Scene, Json.Str(m, "query") ?? "", convert == null ? null : (Func<object, object>)convert.Convert);
                }
                catch (CappyFailure f) { error = f; }
                catch (Exception e) { error = new CappyFailure(Codes.InspectFailed, e.GetType().Name + ": " + e.Message); }
            }
            var sb = new StringBuilder();
            sb.Append("{\"type\":\"inspect_result\",\"id\":");
            Json.WriteString(sb, id);
            if (error == null) sb.Append(",\"value\":").Append(value);
            else
            {
                var e = new JsonObject();
                e["code"] = error.Code;
                e["message"] = Checks.Cap(error.Message, 4000);
                sb.Append(",\"error\":");
                Json.Write(sb, e);
            }
            sb.Append('}');
            SendText(sb.ToString());
        }

        // ---- endings ----

        void FinishRecordingOrReplay()
        {
            var o = op;
            if (o.Kind == "replay")
            {
                o.Summary["ticks"] = o.Ticks;
                o.Summary["inputs"] = nextInput;
                End(o, "completed", null, null);
                return;
            }
            var r = rec ?? new Recording { Game = options.GameId, Seed = o.Seed, StepMs = parts.Clock.StepMs, Control = o.Control };
            r.Ticks = armed ? o.Ticks : 0;
            r.Inputs.RemoveAll(kv => kv.Key > r.Ticks); // input after the last frame never reached the game
            JsonObject payload;
            try
            {
                string dir = options.ReplayDir ?? Path.Combine(Path.GetTempPath(), "cappy-replays");
                payload = ReplayPayload.Make(r.Encode(), Recording.Format, dir);
            }
            catch (Exception e)
            {
                End(o, "failed", Codes.ReplayInvalid, "the replay could not be written: " + e.Message);
                return;
            }
            o.Summary["ticks"] = r.Ticks;
            o.Summary["inputs"] = r.Inputs.Count;
            o.Summary["seed"] = o.Seed;
            if (o.Control == "agent") o.Summary["steps"] = r.Steps.Count;
            End(o, "completed", null, null, payload);
        }

        // Ends the operation: its outcome goes once its pictures are sent.
        void End(Operation o, string status, string code, string message, JsonObject replayPayload = null)
        {
            if (op != o || !o.IsActive || finishing != null) return;
            finishing = new Finish { Status = status, Code = code, Message = message, Replay = replayPayload, Deadline = DateTime.UtcNow.AddSeconds(5) };
            wanted.Clear();
            TryFinish();
        }

        void TryFinish()
        {
            var f = finishing;
            if (f == null) return;
            if (InFlight() > 0 && DateTime.UtcNow < f.Deadline) return;
            var o = op;
            var msg = new JsonObject();
            msg["type"] = f.Status;
            msg["op"] = o.Id;
            if (f.Status == "failed")
            {
                msg["code"] = f.Code;
                msg["message"] = Checks.Cap(f.Message ?? "", 4000);
            }
            else
            {
                if (f.Replay != null) msg["replay"] = f.Replay;
                o.Summary["simMs"] = Math.Round(o.SimTimeMs * 1000) / 1000;
                o.Summary["events"] = o.Events;
                if (framesReq != null)
                {
                    var fr = new JsonObject();
                    fr["sent"] = Volatile.Read(ref framesSent);
                    if (framesDropped > 0) fr["dropped"] = framesDropped;
                    o.Summary["frames"] = fr;
                }
                if (configEvents.Problems.Count > 0) o.Summary["eventProblems"] = new List<string>(configEvents.Problems);
                string s = Json.Write(o.Summary);
                if (Checks.Bytes(s) <= Wire.MaxSummaryBytes) msg["summary"] = new JsonRaw(s);
            }
            Teardown(f.Status);
            Send(msg);
        }

        // Ends the current operation here: input released, camera back, held.
        void Teardown(string status)
        {
            var o = op;
            if (o == null) return;
            bool wasLaunched = launched;
            op = null;
            launched = armed = armPending = resetting = stopPending = false;
            finishing = null;
            if (wasLaunched && o.RunState is IEnumerator)
            {
                var runner = parts.Runner ?? (ICoroutineRunner)defaultRunner;
                if (runner != null) runner.Cancel((IEnumerator)o.RunState);
            }
            if (parts.Input != null && wasLaunched && o.Kind != "scenario")
            {
                parts.Input.ReleaseAll();
                parts.Input.AgentOnly(false);
            }
            if (camera != null && wasLaunched) camera(false);
            camera = null;
            stepId = null;
            step = null;
            stepRunning = picturePending = false;
            deferred.Clear();
            wanted.Clear();
            rec = null;
            replay = null;
            framesReq = null;
            pacer = null;
            Hold();
            o.IsActive = false;
            o.RaiseEnded(status);
        }
    }

    /// <summary>An engine's conversion of its own objects for inspect and event arguments (implemented by an ISceneGraph).</summary>
    public interface IValueConverter
    {
        /// <summary>What to write for v (Unity: an object reference as its name); v itself when nothing special.</summary>
        object Convert(object v);
    }
}
