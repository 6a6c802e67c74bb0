using System;
using System.Collections;
using System.Collections.Concurrent;
using System.Collections.Generic;
using UnityEngine;

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// The package's own object (hidden, kept across scenes): it runs
    /// scenario coroutines and what other threads post to the main thread.
    /// </summary>
    public sealed class CappyHost : MonoBehaviour, ICoroutineRunner
    {
        readonly Dictionary<IEnumerator, Coroutine> running = new Dictionary<IEnumerator, Coroutine>();
        readonly ConcurrentQueue<Action> posted = new ConcurrentQueue<Action>();

        /// <summary>Whether the game runs in the Editor's Play mode (it starts recordings afresh itself).</summary>
        public bool InEditor;

        internal static CappyHost Create(bool inEditor)
        {
            var go = new GameObject("Cappy");
            go.hideFlags = HideFlags.HideAndDontSave;
            DontDestroyOnLoad(go);
            var h = go.AddComponent<CappyHost>();
            h.InEditor = inEditor;
            return h;
        }

        /// <summary>Runs a on the main thread, in the next Update.</summary>
        public void Post(Action a)
        {
            posted.Enqueue(a);
        }

        void Update()
        {
            Action a;
            while (posted.TryDequeue(out a)) a();
        }

        /// <inheritdoc/>
        public void Run(IEnumerator routine, Action<Exception> done)
        {
            running[routine] = StartCoroutine(Guard(routine, done));
        }

        /// <inheritdoc/>
        public void Cancel(IEnumerator routine)
        {
            Coroutine c;
            if (running.TryGetValue(routine, out c) && c != null) StopCoroutine(c);
            running.Remove(routine);
        }

        // Runs routine as Unity would (what it yields: null, WaitForSeconds,
        // a nested IEnumerator), and says how it ended.
        IEnumerator Guard(IEnumerator routine, Action<Exception> done)
        {
            while (true)
            {
                object current;
                try
                {
                    if (!routine.MoveNext()) break;
                    current = routine.Current;
                }
                catch (Exception e)
                {
                    running.Remove(routine);
                    done(e);
                    yield break;
                }
                yield return current;
            }
            running.Remove(routine);
            done(null);
        }
    }
}
