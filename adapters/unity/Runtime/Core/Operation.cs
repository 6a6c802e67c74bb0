using System;
using System.Collections;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Crosscode.Cappy
{
    /// <summary>
    /// One operation the controller asked for: a scenario, a recording or a
    /// replay. Game code emits its events through it (or through
    /// <see cref="Cappy.Emit"/>), on the game's main thread.
    /// </summary>
    public sealed class Operation
    {
        readonly Adapter adapter;
        readonly List<KeyValuePair<double, TaskCompletionSource<bool>>> delays = new List<KeyValuePair<double, TaskCompletionSource<bool>>>();

        internal Operation(Adapter adapter, string id, string kind)
        {
            this.adapter = adapter;
            Id = id;
            Kind = kind;
            Parameters = new JsonObject();
            Presentation = new JsonObject();
            Summary = new JsonObject();
            TimeScale = 1;
            Seed = 1;
        }

        /// <summary>The controller's operation id.</summary>
        public string Id { get; private set; }
        /// <summary>scenario, recording or replay.</summary>
        public string Kind { get; private set; }
        /// <summary>The scenario's id (scenarios).</summary>
        public string Scenario { get; internal set; }
        /// <summary>The scenario's parameters, checked, defaults filled in (numbers are doubles).</summary>
        public JsonObject Parameters { get; internal set; }
        /// <summary>The presentation (timeScale, camera and the game's own keys).</summary>
        public JsonObject Presentation { get; internal set; }
        /// <summary>The presentation's speed (1 when none): t is simulation time divided by it.</summary>
        public double TimeScale { get; internal set; }
        /// <summary>The presentation's camera, or null.</summary>
        public string Camera { get; internal set; }
        /// <summary>The seed of a recording or replay (the game was seeded with it before its first step).</summary>
        public long Seed { get; internal set; }
        /// <summary>"agent" when an agent plays the recording in steps (or the replay of one), else null.</summary>
        public string Control { get; internal set; }
        /// <summary>The summary sent with completed; add to it.</summary>
        public JsonObject Summary { get; private set; }
        /// <summary>Whether the controller asked it to stop (recordings and replays).</summary>
        public bool StopRequested { get; internal set; }
        /// <summary>Whether it is still running (no outcome sent, not cancelled).</summary>
        public bool IsActive { get; internal set; }
        /// <summary>How it ended: completed, failed or cancelled (null while active).</summary>
        public string Outcome { get; internal set; }
        /// <summary>How many events it sent.</summary>
        public int Events { get; internal set; }

        /// <summary>Simulation frames run since it started.</summary>
        public long Ticks { get; internal set; }
        internal double StepMs;
        internal double LastT;
        internal object RunState; // the scenario's routine or task

        /// <summary>Game time since the operation started, in ms.</summary>
        public double SimTimeMs { get { return Ticks * StepMs; } }
        /// <summary>Presented time since the operation started, in ms: the t of its events.</summary>
        public double PresentedTimeMs { get { return SimTimeMs / TimeScale; } }

        /// <summary>Called when the controller asks it to stop.</summary>
        public event Action Stopping;
        /// <summary>Called when it ends, with completed, failed or cancelled.</summary>
        public event Action<string> Ended;

        /// <summary>
        /// Sends an event at the operation's presented time. payload is null
        /// or an object (IDictionary, JsonObject, or any object whose public
        /// fields are written); its simT is added (the simulation time, the
        /// same at any timeScale). False once the operation is over.
        /// </summary>
        public bool Emit(string name, object payload = null, double? durationMs = null)
        {
            return adapter.EmitEvent(this, name, payload, durationMs);
        }

        /// <summary>Asks for an extra picture now (a moment worth seeing), within twice the asked rate.</summary>
        public void CaptureFrame(string reason)
        {
            adapter.ExtraFrame(this, reason);
        }

        /// <summary>Ends a scenario as completed, with a summary to add (or null).</summary>
        public void Complete(object summary = null)
        {
            adapter.CompleteFromGame(this, summary);
        }

        /// <summary>Ends the operation as failed with the game's own code.</summary>
        public void Fail(string code, string message)
        {
            adapter.FailFromGame(this, code, message);
        }

        /// <summary>A coroutine step that waits ms of game time (yield return op.Wait(500)).</summary>
        public IEnumerator Wait(double ms)
        {
            double until = SimTimeMs + ms;
            while (IsActive && SimTimeMs < until - 1e-9) yield return null;
        }

        /// <summary>A task that completes after ms of game time (await op.Delay(500)); it never completes if the operation ends first.</summary>
        public Task Delay(double ms)
        {
            var tcs = new TaskCompletionSource<bool>();
            double until = SimTimeMs + ms;
            if (SimTimeMs >= until - 1e-9) tcs.SetResult(true);
            else lock (delays) delays.Add(new KeyValuePair<double, TaskCompletionSource<bool>>(until, tcs));
            return tcs.Task;
        }

        internal void ReleaseDelays()
        {
            List<TaskCompletionSource<bool>> due = null;
            lock (delays)
            {
                for (int i = delays.Count - 1; i >= 0; i--)
                {
                    if (SimTimeMs < delays[i].Key - 1e-9) continue;
                    if (due == null) due = new List<TaskCompletionSource<bool>>();
                    due.Add(delays[i].Value);
                    delays.RemoveAt(i);
                }
            }
            if (due != null) foreach (var t in due) t.TrySetResult(true);
        }

        internal void RaiseStopping()
        {
            var h = Stopping;
            if (h != null) h();
        }

        internal void RaiseEnded(string outcome)
        {
            IsActive = false;
            Outcome = outcome;
            var h = Ended;
            if (h != null) h(outcome);
        }
    }
}
