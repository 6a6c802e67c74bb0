using System.Collections.Generic;
using System.IO;
using UnityEditor;
using UnityEditor.SceneManagement;
using UnityEngine;
using UnityEngine.SceneManagement;

namespace Crosscode.Cappy.Editor
{
    /// <summary>
    /// Cappy > Check: enters Play mode, plays one look and one step of
    /// 500 ms as an agent would (against the core's own controller: no
    /// crosscode-mcp needed), and shows what an agent would get: the
    /// capabilities, the actions, the picture at the step's end, and every
    /// problem with its fix; also whether crosscode-mcp is reachable.
    /// </summary>
    [InitializeOnLoad]
    public sealed class CappyCheckWindow : EditorWindow
    {
        const string Pending = "Cappy.CheckPending";

        SelfCheck.Report report;
        Texture2D picture;
        string setup = "";
        Vector2 scroll;

        static CappyCheckWindow()
        {
            // Play mode may load any scene of the project, listed in the build settings or not.
            Crosscode.Cappy.Unity.CappyRuntime.EditorLoadScene = delegate (string path)
            {
                EditorSceneManager.LoadSceneInPlayMode(path, new LoadSceneParameters(LoadSceneMode.Single));
            };
            EditorApplication.playModeStateChanged += OnPlayMode;
        }

        [MenuItem("Cappy/Check")]
        static void Check()
        {
            var w = GetWindow<CappyCheckWindow>("Cappy Check");
            w.report = null;
            w.setup = Setup();
            w.Show();
            if (EditorApplication.isPlaying) Run();
            else
            {
                SessionState.SetBool(Pending, true);
                EditorApplication.isPlaying = true;
            }
        }

        static void OnPlayMode(PlayModeStateChange change)
        {
            if (change == PlayModeStateChange.EnteredPlayMode && SessionState.GetBool(Pending, false))
            {
                SessionState.SetBool(Pending, false);
                Run();
            }
        }

        static void Run()
        {
            try
            {
                Crosscode.Cappy.Unity.CappyRuntime.Check(delegate (SelfCheck.Report r)
                {
                    var w = GetWindow<CappyCheckWindow>("Cappy Check");
                    w.report = r;
                    if (r.Pictures.Count > 0)
                    {
                        w.picture = new Texture2D(2, 2);
                        w.picture.LoadImage(r.Pictures[r.Pictures.Count - 1]);
                    }
                    w.Repaint();
                });
            }
            catch (System.InvalidOperationException e)
            {
                var w = GetWindow<CappyCheckWindow>("Cappy Check");
                w.report = new SelfCheck.Report();
                w.report.Problems.Add(e.Message);
                w.Repaint();
            }
        }

        // What the project has, read from its files: the package and the
        // Input System in Packages/manifest.json, crosscode-mcp's endpoint.
        static string Setup()
        {
            var lines = new List<string>();
            string manifest = Path.Combine("Packages", "manifest.json");
            string text = File.Exists(manifest) ? File.ReadAllText(manifest) : "";
            lines.Add(text.Contains("\"com.unity.inputsystem\"") ? "Input System: installed" : "Input System: not in Packages/manifest.json (Window > Package Manager > Input System)");
            string endpoint, token, why;
            var settings = Crosscode.Cappy.Unity.CappySettings.Load();
            lines.Add(EndpointFile.Find(Directory.GetCurrentDirectory(), settings.dataFolder, out endpoint, out token, out why)
                ? "crosscode-mcp: listening at " + endpoint + " (Play mode connects to it)"
                : "crosscode-mcp: " + why);
            return string.Join("\n", lines.ToArray());
        }

        void OnGUI()
        {
            scroll = EditorGUILayout.BeginScrollView(scroll);
            EditorGUILayout.HelpBox(setup, MessageType.Info);
            if (report == null)
            {
                EditorGUILayout.LabelField("Playing one step...");
                EditorGUILayout.EndScrollView();
                return;
            }
            EditorGUILayout.HelpBox(report.Ok ? "An agent can play this game: it ran a step of " + report.SimT + " ms and saw the picture below." : "Problems:\n" + string.Join("\n", report.Problems.ToArray()), report.Ok ? MessageType.Info : MessageType.Warning);
            EditorGUILayout.LabelField("Capabilities", string.Join(", ", report.Capabilities.ToArray()));
            EditorGUILayout.LabelField("Actions", string.Join(", ", report.Actions.ToArray()));
            EditorGUILayout.LabelField("Replay", report.ReplayBytes + " bytes");
            if (picture != null) GUILayout.Label(picture);
            EditorGUILayout.EndScrollView();
        }
    }
}
