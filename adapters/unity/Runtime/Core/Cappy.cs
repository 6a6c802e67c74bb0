using System;
using System.Collections;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Crosscode.Cappy
{
    /// <summary>What a scenario says about itself in the registry.</summary>
    public sealed class ScenarioInfo
    {
        /// <summary>A name for agents to read (optional).</summary>
        public string Name;
        /// <summary>What it plays, for agents (optional).</summary>
        public string Description;
        /// <summary>Its parameters by name (optional).</summary>
        public Dictionary<string, Parameter> Parameters = new Dictionary<string, Parameter>();

        /// <summary>Adds a parameter.</summary>
        public ScenarioInfo Param(string name, Parameter p)
        {
            Parameters[name] = p;
            return this;
        }
    }

    /// <summary>
    /// What game code calls: scenarios, cameras and events. It works
    /// before the adapter connects (what Awake and Start register is in the
    /// registry it sends) and does nothing when the game was not started by
    /// crosscode-mcp. Call it from the game's main thread.
    /// </summary>
    public static class Cappy
    {
        internal sealed class ScenarioEntry
        {
            public string Id;
            public ScenarioInfo Info;
            public Func<Operation, IEnumerator> Routine;
            public Func<Operation, Task> Async;
            public Action<Operation> Start;
        }

        static readonly object gate = new object();
        static readonly List<ScenarioEntry> scenarios = new List<ScenarioEntry>();
        static readonly Dictionary<string, Action<bool>> cameras = new Dictionary<string, Action<bool>>();
        static int version;

        /// <summary>The adapter connected to crosscode-mcp, or null.</summary>
        public static Adapter Adapter { get; internal set; }

        /// <summary>The operation running now, or null.</summary>
        public static Operation Current
        {
            get { var a = Adapter; return a == null ? null : a.Current; }
        }

        /// <summary>Called when an operation starts, before its scenario runs.</summary>
        public static event Action<Operation> OperationStarted;

        internal static void RaiseStarted(Operation op)
        {
            var h = OperationStarted;
            if (h != null) h(op);
        }

        /// <summary>
        /// Registers a scenario played by a coroutine: when it ends the
        /// scenario completes (op.Complete or op.Fail end it sooner); an
        /// exception fails it (a CappyFailure with its code).
        /// </summary>
        public static void RegisterScenario(string id, ScenarioInfo info, Func<Operation, IEnumerator> run)
        {
            Add(new ScenarioEntry { Id = id, Info = info, Routine = run });
        }

        /// <summary>Registers a scenario played by an async method (its continuations run on the main thread).</summary>
        public static void RegisterScenario(string id, ScenarioInfo info, Func<Operation, Task> run)
        {
            Add(new ScenarioEntry { Id = id, Info = info, Async = run });
        }

        /// <summary>Registers a scenario that start begins and op.Complete or op.Fail ends.</summary>
        public static void RegisterScenario(string id, ScenarioInfo info, Action<Operation> start)
        {
            Add(new ScenarioEntry { Id = id, Info = info, Start = start });
        }

        static void Add(ScenarioEntry e)
        {
            string why = Checks.Id(e.Id);
            if (why != null) throw new ArgumentException("scenario id \"" + e.Id + "\": " + why);
            if (e.Info == null) e.Info = new ScenarioInfo();
            foreach (var kv in e.Info.Parameters)
            {
                why = Checks.ParameterSpec(kv.Key, kv.Value);
                if (why != null) throw new ArgumentException("scenario " + e.Id + ": " + why);
            }
            lock (gate)
            {
                scenarios.RemoveAll(s => s.Id == e.Id);
                scenarios.Add(e);
                version++;
            }
        }

        /// <summary>Removes a scenario.</summary>
        public static void UnregisterScenario(string id)
        {
            lock (gate)
            {
                if (scenarios.RemoveAll(s => s.Id == id) > 0) version++;
            }
        }

        /// <summary>
        /// Names a camera for presentation.camera (capability
        /// alternate_cameras): show(true) switches to it for an operation,
        /// show(false) back after it. Register cameras before the first
        /// frame ends: hello lists the capability then.
        /// </summary>
        public static void RegisterCamera(string name, Action<bool> show)
        {
            lock (gate) cameras[name] = show;
        }

        /// <summary>Sends an event to the running operation; false when none runs.</summary>
        public static bool Emit(string name, object payload = null, double? durationMs = null)
        {
            var op = Current;
            return op != null && op.Emit(name, payload, durationMs);
        }

        internal static int Version { get { lock (gate) return version; } }

        internal static List<ScenarioEntry> Scenarios()
        {
            lock (gate) return new List<ScenarioEntry>(scenarios);
        }

        internal static ScenarioEntry Scenario(string id)
        {
            lock (gate) return scenarios.Find(s => s.Id == id);
        }

        internal static Action<bool> Camera(string name)
        {
            Action<bool> show;
            lock (gate) return cameras.TryGetValue(name, out show) ? show : null;
        }

        internal static List<string> CameraNames()
        {
            lock (gate) return new List<string>(cameras.Keys);
        }

        /// <summary>Forgets every scenario and camera (tests; a domain reload does it in Unity).</summary>
        public static void Reset()
        {
            lock (gate)
            {
                scenarios.Clear();
                cameras.Clear();
                version++;
            }
            Adapter = null;
            OperationStarted = null;
        }
    }
}
