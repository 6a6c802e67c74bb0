using System;
using System.Collections;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Threading;

namespace Crosscode.Cappy
{
    /// <summary>
    /// Runs scenario coroutines when the engine has no runner of its own (a
    /// console game): each frame, one MoveNext of each; a yielded
    /// IEnumerator runs nested (op.Wait(ms) yields until that much game
    /// time passed); anything else yielded waits one frame.
    /// </summary>
    public sealed class FrameRunner : ICoroutineRunner
    {
        sealed class Entry
        {
            public IEnumerator Root;
            public Stack<IEnumerator> Stack = new Stack<IEnumerator>();
            public Action<Exception> Done;
        }

        readonly List<Entry> running = new List<Entry>();

        /// <inheritdoc/>
        public void Run(IEnumerator routine, Action<Exception> done)
        {
            var e = new Entry { Root = routine, Done = done };
            e.Stack.Push(routine);
            running.Add(e);
        }

        /// <inheritdoc/>
        public void Cancel(IEnumerator routine)
        {
            running.RemoveAll(e => e.Root == routine);
        }

        /// <summary>Advances every coroutine by one frame.</summary>
        public void Tick()
        {
            foreach (var e in running.ToArray())
            {
                if (!running.Contains(e)) continue;
                Exception err = null;
                bool finished = false;
                try
                {
                    while (true)
                    {
                        var top = e.Stack.Peek();
                        if (!top.MoveNext())
                        {
                            e.Stack.Pop();
                            if (e.Stack.Count == 0) { finished = true; break; }
                            continue;
                        }
                        var nested = top.Current as IEnumerator;
                        if (nested != null) { e.Stack.Push(nested); continue; }
                        break;
                    }
                }
                catch (Exception x)
                {
                    err = x;
                    finished = true;
                }
                if (finished)
                {
                    running.Remove(e);
                    if (e.Done != null) e.Done(err);
                }
            }
        }
    }

    /// <summary>
    /// A SynchronizationContext that runs what is posted to it on the
    /// thread that calls <see cref="Run"/>: a console game installs it on
    /// its main thread so that async scenarios continue there, as Unity's
    /// own context does.
    /// </summary>
    public sealed class FrameContext : SynchronizationContext
    {
        readonly ConcurrentQueue<KeyValuePair<SendOrPostCallback, object>> posted = new ConcurrentQueue<KeyValuePair<SendOrPostCallback, object>>();

        /// <summary>Signalled when something is posted.</summary>
        public readonly AutoResetEvent Posted = new AutoResetEvent(false);

        /// <inheritdoc/>
        public override void Post(SendOrPostCallback d, object state)
        {
            posted.Enqueue(new KeyValuePair<SendOrPostCallback, object>(d, state));
            Posted.Set();
        }

        /// <inheritdoc/>
        public override void Send(SendOrPostCallback d, object state)
        {
            throw new NotSupportedException("FrameContext runs posted work only");
        }

        /// <summary>Runs what was posted so far.</summary>
        public void Run()
        {
            KeyValuePair<SendOrPostCallback, object> w;
            int n = posted.Count;
            while (n-- > 0 && posted.TryDequeue(out w)) w.Key(w.Value);
        }
    }
}
