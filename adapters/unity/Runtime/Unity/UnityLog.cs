using UnityEngine;

namespace Crosscode.Cappy.Unity
{
    /// <summary>The core's log in the console (Debug.Log is safe from any thread).</summary>
    public sealed class UnityLog : ICappyLog
    {
        public void Info(string message) { Debug.Log(message); }
        public void Warn(string message) { Debug.LogWarning(message); }
        public void Error(string message) { Debug.LogError(message); }
    }
}
