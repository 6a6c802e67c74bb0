// Reference declarations of exactly the UnityEditor members the package's
// Editor folder uses, written from Unity's scripting reference. Nothing here
// runs. Each member carries the Unity version it first appeared in; every
// one exists in Unity 2022.3 LTS and Unity 6.
using System;
using UnityEngine;
using UnityStubs;

namespace UnityEditor
{
    [Since("1.0"), AttributeUsage(AttributeTargets.Class)]
    public sealed class InitializeOnLoadAttribute : Attribute { }

    [Since("1.0"), AttributeUsage(AttributeTargets.Method)]
    public sealed class MenuItem : Attribute
    {
        [Since("1.0")] public MenuItem(string itemName) { }
    }

    [Since("2017.2")]
    public enum PlayModeStateChange { EnteredEditMode = 0, ExitingEditMode = 1, EnteredPlayMode = 2, ExitingPlayMode = 3 }

    [Since("1.0")]
    public static class EditorApplication
    {
        [Since("1.0")] public static bool isPlaying { get { throw new NotSupportedException(); } set { } }
        [Since("2017.2")] public static event Action<PlayModeStateChange> playModeStateChanged { add { } remove { } }
    }

    [Since("5.0")]
    public static class SessionState
    {
        [Since("5.0")] public static bool GetBool(string key, bool defaultValue) { throw new NotSupportedException(); }
        [Since("5.0")] public static void SetBool(string key, bool value) { throw new NotSupportedException(); }
    }

    [Since("1.0")]
    public enum MessageType { None = 0, Info = 1, Warning = 2, Error = 3 }

    [Since("1.0")]
    public class EditorWindow : ScriptableObject
    {
        [Since("1.0")] public static T GetWindow<T>(string title) where T : EditorWindow { throw new NotSupportedException(); }
        [Since("1.0")] public void Show() { throw new NotSupportedException(); }
        [Since("1.0")] public void Repaint() { throw new NotSupportedException(); }
    }

    [Since("1.0")]
    public static class EditorGUILayout
    {
        [Since("1.0")] public static void HelpBox(string message, MessageType type) { throw new NotSupportedException(); }
        [Since("1.0")] public static void LabelField(string label, params GUILayoutOption[] options) { throw new NotSupportedException(); }
        [Since("1.0")] public static void LabelField(string label, string label2, params GUILayoutOption[] options) { throw new NotSupportedException(); }
        [Since("1.0")] public static Vector2 BeginScrollView(Vector2 scrollPosition, params GUILayoutOption[] options) { throw new NotSupportedException(); }
        [Since("1.0")] public static void EndScrollView() { throw new NotSupportedException(); }
    }
}

namespace UnityEditor.SceneManagement
{
    [Since("2018.3")]
    public static class EditorSceneManager
    {
        [Since("2018.3")] public static UnityEngine.SceneManagement.Scene LoadSceneInPlayMode(string path, UnityEngine.SceneManagement.LoadSceneParameters parameters) { throw new NotSupportedException(); }
    }
}
