using System;
using System.Collections;
using System.Collections.Generic;
using System.IO;
using UnityEngine;
using UnityEngine.LowLevel;
using UnityEngine.SceneManagement;

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// Starts the package by itself: in a player launched by crosscode-mcp
    /// (CAPPY_ENDPOINT set), or in the Editor's Play mode when crosscode-mcp
    /// runs for the repository and launches nothing (its endpoint file).
    /// Otherwise it does nothing, so shipped builds are unaffected. It binds
    /// the core (Runtime/Core) to the engine: the clock, the Input System,
    /// pictures, the scene, the seed and, in the Editor, fresh starts.
    /// </summary>
    public static class CappyRuntime
    {
        /// <summary>The adapter's name in hello.</summary>
        public const string AdapterName = "cappy-unity";

        static Adapter adapter;
        static CappyHost host;
        static UnityClock clock;
        static bool inserted;
        static string launchEndpoint, launchToken;

        /// <summary>The running adapter, or null.</summary>
        public static Adapter Adapter { get { return adapter; } }

        /// <summary>
        /// In the Editor: loads a scene by path in Play mode (the Editor
        /// assembly sets it: scenes need not be in the build settings there).
        /// </summary>
        public static Action<string> EditorLoadScene;

        // Unity may keep static state across Play mode sessions when domain
        // reload is off: start each session clean.
        [RuntimeInitializeOnLoadMethod(RuntimeInitializeLoadType.SubsystemRegistration)]
        static void ResetStatics()
        {
            adapter = null;
            host = null;
            clock = null;
            launchEndpoint = launchToken = null;
            Cappy.Reset();
        }

        // Before the first scene loads: find the controller, seed
        // UnityEngine.Random with the launch's seed, and hold the game.
        [RuntimeInitializeOnLoadMethod(RuntimeInitializeLoadType.BeforeSceneLoad)]
        static void Boot()
        {
            var settings = CappySettings.Load();
            string endpoint = Environment.GetEnvironmentVariable(Wire.EndpointEnv);
            string token = Environment.GetEnvironmentVariable(Wire.TokenEnv);
            bool fromFile = false;
            if (string.IsNullOrEmpty(endpoint))
            {
                if (!Application.isEditor || !settings.connectInEditor) return;
                string why;
                if (!EndpointFile.Find(Directory.GetCurrentDirectory(), settings.dataFolder, out endpoint, out token, out why))
                {
                    if (why.Contains("stale")) Debug.LogWarning("Cappy: " + why + "; Play mode runs without it.");
                    return;
                }
                fromFile = true;
            }
            if (string.IsNullOrEmpty(token))
            {
                Debug.LogWarning("Cappy: " + Wire.EndpointEnv + " is set but " + Wire.TokenEnv + " is not; not connecting.");
                return;
            }
            long seed;
            if (!long.TryParse(Environment.GetEnvironmentVariable(Wire.SeedEnv), out seed)) seed = 1;
            UnityRandom.SeedNow(seed);
            launchEndpoint = endpoint;
            launchToken = token;
            clock = new UnityClock(settings);
            clock.Hold(true);
            host = CappyHost.Create(fromFile);
            Insert();
            Application.quitting += Stop;
        }

        // After the first scene loaded (its Awake ran): start the adapter.
        // Hello goes at the end of the first frame, once Start ran too.
        [RuntimeInitializeOnLoadMethod(RuntimeInitializeLoadType.AfterSceneLoad)]
        static void Begin()
        {
            if (host == null) return;
            var settings = CappySettings.Load();
            var missing = new List<string>();
            var parts = Parts(missing);
            if (host.InEditor) parts.Reset = new UnityReset();
            foreach (var m in missing) Debug.LogWarning("Cappy: " + m);
            adapter = new Adapter(new AdapterOptions
            {
                AdapterName = AdapterName,
                GameId = string.IsNullOrEmpty(settings.gameId) ? Slug(Application.productName) : settings.gameId,
                GameName = Application.productName,
                Build = Application.version,
                Inspect = settings.inspect,
                JpegQuality = settings.jpegQuality,
                ReplayDir = Path.Combine(Application.temporaryCachePath, "cappy-replays"),
            }, parts);
            adapter.Disconnected += OnDisconnected;
            adapter.Start(launchEndpoint, launchToken);
        }

        // The engine's parts for the core; what the project lacks goes to missing.
        static EngineParts Parts(List<string> missing)
        {
            return new EngineParts
            {
                Clock = clock,
                Frames = UnityFrames.Create(),
                Scene = new UnityScene(),
                Random = new UnityRandom(),
                Runner = host,
                Log = new UnityLog(),
                Input = UnityInput.Create(missing),
            };
        }

        static void OnDisconnected(string why)
        {
            Debug.LogWarning("Cappy: " + why);
            clock.Release();
            // A player crosscode-mcp launched quits with it; the Editor plays on.
            if (!Application.isEditor && CappySettings.Load().quitOnDisconnect)
                Application.Quit(why.Contains("rejected") ? 1 : 0);
        }

        static void Stop()
        {
            if (adapter != null) adapter.Close();
            adapter = null;
            Remove();
        }

        // The core's two calls each frame, in the player loop: BeginFrame
        // first in Update (after time and input are updated), EndFrame last
        // of all (after rendering): what it decides then (hold or run, the
        // input it queues) takes effect in the next frame.
        struct CappyBeginFrame { }
        struct CappyEndFrame { }

        static void Insert()
        {
            if (inserted) return;
            var loop = PlayerLoop.GetCurrentPlayerLoop();
            var subs = loop.subSystemList;
            for (int i = 0; i < subs.Length; i++)
            {
                if (subs[i].type == typeof(UnityEngine.PlayerLoop.Update))
                    subs[i].subSystemList = With(subs[i].subSystemList, new PlayerLoopSystem { type = typeof(CappyBeginFrame), updateDelegate = BeginFrame }, true);
                else if (subs[i].type == typeof(UnityEngine.PlayerLoop.PostLateUpdate))
                    subs[i].subSystemList = With(subs[i].subSystemList, new PlayerLoopSystem { type = typeof(CappyEndFrame), updateDelegate = EndFrame }, false);
            }
            loop.subSystemList = subs;
            PlayerLoop.SetPlayerLoop(loop);
            inserted = true;
        }

        static void Remove()
        {
            if (!inserted) return;
            var loop = PlayerLoop.GetCurrentPlayerLoop();
            var subs = loop.subSystemList;
            for (int i = 0; i < subs.Length; i++)
            {
                var list = new List<PlayerLoopSystem>(subs[i].subSystemList ?? new PlayerLoopSystem[0]);
                list.RemoveAll(s => s.type == typeof(CappyBeginFrame) || s.type == typeof(CappyEndFrame));
                subs[i].subSystemList = list.ToArray();
            }
            loop.subSystemList = subs;
            PlayerLoop.SetPlayerLoop(loop);
            inserted = false;
        }

        static PlayerLoopSystem[] With(PlayerLoopSystem[] list, PlayerLoopSystem s, bool first)
        {
            var l = new List<PlayerLoopSystem>(list ?? new PlayerLoopSystem[0]);
            if (first) l.Insert(0, s);
            else l.Add(s);
            return l.ToArray();
        }

        static void BeginFrame()
        {
            if (adapter != null) adapter.BeginFrame();
        }

        static void EndFrame()
        {
            if (adapter != null) adapter.EndFrame();
        }

        static string Slug(string s)
        {
            var sb = new System.Text.StringBuilder();
            foreach (char c in (s ?? "").ToLowerInvariant())
                sb.Append((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? c : '-');
            string slug = sb.ToString();
            while (slug.Contains("--")) slug = slug.Replace("--", "-");
            slug = slug.Trim('-');
            return slug.Length > 0 ? slug : "unity-game";
        }

        /// <summary>
        /// Cappy > Check: plays one look and one step of 500 ms against the
        /// core's own controller (no crosscode-mcp needed) and hands back,
        /// on the main thread, what it saw: the capabilities, the actions,
        /// the pictures, every problem. Play mode only, and not while
        /// crosscode-mcp is connected.
        /// </summary>
        public static void Check(Action<SelfCheck.Report> done)
        {
            if (!Application.isPlaying) throw new InvalidOperationException("Cappy's check runs in Play mode");
            if (adapter != null) throw new InvalidOperationException("crosscode-mcp is connected: use its capture_status and start_recording instead");
            if (host == null) host = CappyHost.Create(true);
            if (clock == null) clock = new UnityClock(CappySettings.Load());
            Insert();
            var missing = new List<string>();
            var check = new SelfCheck(Parts(missing), Slug(Application.productName), missing);
            adapter = check.Adapter;
            check.Run(report => host.Post(delegate
            {
                check.Adapter.Close();
                adapter = null;
                clock.Release();
                done(report);
            }));
        }
    }
}
