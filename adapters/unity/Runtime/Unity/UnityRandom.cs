using System;
using UnityEngine;
using UnityEngine.SceneManagement;

namespace Crosscode.Cappy.Unity
{
    /// <summary>The seed: UnityEngine.Random, before the first scene loads and at each recording's start.</summary>
    public sealed class UnityRandom : IGameRandom
    {
        /// <inheritdoc/>
        public void Seed(long seed) { SeedNow(seed); }

        /// <summary>Seeds UnityEngine.Random (a seed beyond 32 bits is folded into one).</summary>
        public static void SeedNow(long seed)
        {
            UnityEngine.Random.InitState(unchecked((int)(seed ^ (seed >> 32))));
        }
    }

    /// <summary>
    /// In the Editor's Play mode (capability resets_itself): each recording
    /// and replay starts afresh, seeded first, in the first scene again.
    /// </summary>
    public sealed class UnityReset : IGameReset
    {
        readonly string firstScene = SceneManager.GetActiveScene().path;
        readonly int firstIndex = SceneManager.GetActiveScene().buildIndex;

        /// <inheritdoc/>
        public void Restart(long seed, Action done)
        {
            UnityRandom.SeedNow(seed);
            UnityEngine.Events.UnityAction<Scene, LoadSceneMode> loaded = null;
            loaded = delegate (Scene s, LoadSceneMode mode)
            {
                SceneManager.sceneLoaded -= loaded;
                done();
            };
            SceneManager.sceneLoaded += loaded;
            if (CappyRuntime.EditorLoadScene != null && !string.IsNullOrEmpty(firstScene)) CappyRuntime.EditorLoadScene(firstScene);
            else SceneManager.LoadScene(firstIndex < 0 ? 0 : firstIndex);
        }
    }
}
