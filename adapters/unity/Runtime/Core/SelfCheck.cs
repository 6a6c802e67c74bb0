using System;
using System.Collections.Generic;
using System.Threading;

namespace Crosscode.Cappy
{
    /// <summary>
    /// A game's own check of its setup, without crosscode-mcp (Unity's
    /// Cappy > Check): an adapter on the engine's parts, driven by a small
    /// controller in the same process that plays what an agent's first
    /// moments are: the handshake, an agent-controlled recording with
    /// frames, a look and a step of 500 ms, then stop; it reports the
    /// capabilities and actions the game offers, the pictures it sent, and
    /// every problem met. The engine keeps calling the adapter's
    /// BeginFrame and EndFrame meanwhile.
    /// </summary>
    public sealed class SelfCheck : ITransport
    {
        /// <summary>What the check saw.</summary>
        public sealed class Report
        {
            /// <summary>Whether the play ran to its end with no problem.</summary>
            public bool Ok;
            /// <summary>What went wrong or is missing, each with its fix when known.</summary>
            public List<string> Problems = new List<string>();
            /// <summary>The capabilities hello listed.</summary>
            public List<string> Capabilities = new List<string>();
            /// <summary>The actions an agent would see ("name (kind)").</summary>
            public List<string> Actions = new List<string>();
            /// <summary>The pictures sent (the last is the step's end), as image files.</summary>
            public List<byte[]> Pictures = new List<byte[]>();
            /// <summary>Game time the step ran, in ms.</summary>
            public double SimT;
            /// <summary>The replay's size, in bytes.</summary>
            public int ReplayBytes;
        }

        /// <summary>The adapter the engine drives during the check.</summary>
        public readonly Adapter Adapter;
        readonly Report report = new Report();
        readonly object gate = new object();
        Action<Report> done;
        Timer timeout;
        bool finished, agent, recording;

        /// <summary>A check of a game with these parts; missing lists what the engine layer lacks already.</summary>
        public SelfCheck(EngineParts parts, string gameId, IList<string> missing)
        {
            Adapter = new Adapter(new AdapterOptions { GameId = gameId, AdapterName = "cappy-check" }, parts);
            if (missing != null) report.Problems.AddRange(missing);
        }

        /// <summary>
        /// Starts the check; done gets the report (on another thread) within
        /// 20 s; then close the adapter on the main thread.
        /// </summary>
        public void Run(Action<Report> done)
        {
            this.done = done;
            timeout = new Timer(delegate { Finish("the game did not finish the check within 20 s: is the game's main loop running (Play mode, not paused)?"); }, null, 20000, Timeout.Infinite);
            Adapter.Start(this, "check");
        }

        void Reply(string json)
        {
            ThreadPool.QueueUserWorkItem(delegate { Adapter.Receive(json); });
        }

        /// <inheritdoc/>
        public bool Send(string text)
        {
            JsonObject m;
            try { m = (JsonObject)Json.Parse(text); }
            catch (Exception e) { Finish("the adapter sent what is not JSON: " + e.Message); return false; }
            string type = Json.Str(m, "type");
            lock (gate)
            {
                switch (type)
                {
                    case "hello":
                        foreach (var c in (List<object>)m["capabilities"]) report.Capabilities.Add((string)c);
                        agent = report.Capabilities.Contains(Capability.Input);
                        if (!agent) report.Problems.Add("no input capability: an agent cannot play this game");
                        if (!report.Capabilities.Contains(Capability.Frames)) report.Problems.Add("no frames capability: the game does not render here, so an agent sees nothing");
                        Reply("{\"type\":\"welcome\",\"protocol\":1,\"controller\":{\"name\":\"cappy-check\",\"version\":\"" + Adapter.Version + "\"}}");
                        break;
                    case "actions":
                        foreach (JsonObject a in (List<object>)m["actions"]) report.Actions.Add(a["name"] + " (" + a["kind"] + ")");
                        break;
                    case "scenarios":
                        if (!recording)
                        {
                            recording = true;
                            string frames = report.Capabilities.Contains(Capability.Frames) ? ",\"frames\":{\"fps\":2,\"maxWidth\":640,\"formats\":[\"image/jpeg\",\"image/png\"]}" : "";
                            Reply("{\"type\":\"record_start\",\"op\":\"check\"" + (agent ? ",\"control\":\"agent\"" : "") + frames + "}");
                        }
                        break;
                    case "started":
                        if (agent) Reply("{\"type\":\"step\",\"op\":\"check\",\"id\":\"s1\",\"actions\":[],\"ms\":0}");
                        else ThreadPool.QueueUserWorkItem(delegate { Thread.Sleep(600); Adapter.Receive("{\"type\":\"stop\",\"op\":\"check\"}"); });
                        break;
                    case "frame":
                        try { report.Pictures.Add(Convert.FromBase64String(Json.Str(m, "data"))); }
                        catch (FormatException) { report.Problems.Add("a frame's data is not base64"); }
                        break;
                    case "stepped":
                        report.SimT = Json.Number(m, "simT") ?? 0;
                        if (Json.Str(m, "id") == "s1") Reply("{\"type\":\"step\",\"op\":\"check\",\"id\":\"s2\",\"actions\":[],\"ms\":500}");
                        else Reply("{\"type\":\"stop\",\"op\":\"check\"}");
                        break;
                    case "step_refused":
                        report.Problems.Add("a step was refused: " + Json.Str(m, "message"));
                        Reply("{\"type\":\"stop\",\"op\":\"check\"}");
                        break;
                    case "completed":
                        try
                        {
                            var data = ReplayPayload.Read(m["replay"]);
                            Recording.Decode(data);
                            report.ReplayBytes = data.Length;
                        }
                        catch (CappyFailure f) { report.Problems.Add("the recording's replay: " + f.Message); }
                        if (agent && Math.Abs(report.SimT - 500) > 1e-6) report.Problems.Add("the step ran " + report.SimT + " ms of game time, not 500");
                        if (report.Capabilities.Contains(Capability.Frames) && report.Pictures.Count == 0) report.Problems.Add("no picture came: the frame capture failed (see the console)");
                        Finish(null);
                        break;
                    case "failed":
                        Finish("the recording failed: " + Json.Str(m, "code") + ": " + Json.Str(m, "message"));
                        break;
                }
            }
            return true;
        }

        /// <inheritdoc/>
        public void Close(string reason)
        {
            if (!finished) Finish("the adapter closed the connection: " + reason);
        }

        void Finish(string problem)
        {
            Action<Report> d;
            lock (gate)
            {
                if (finished) return;
                finished = true;
                if (problem != null) report.Problems.Add(problem);
                report.Ok = problem == null && report.Problems.Count == 0;
                d = done;
            }
            if (timeout != null) timeout.Dispose();
            if (d != null) d(report); // the caller closes the adapter, on the main thread
        }
    }
}
