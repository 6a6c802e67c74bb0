// Reference declarations of exactly the UnityEngine members the package's
// Unity layer (adapters/unity/Runtime/Unity) and Editor folder use, written
// from Unity's scripting reference, so that mcs compiles them here as Unity
// would. Nothing here runs: every body throws. Each member carries the
// Unity version it first appeared in ([Since]); every one of them exists in
// Unity 2022.3 LTS and Unity 6 (6000.0), the versions the package supports.
using System;
using System.Collections;

namespace UnityStubs
{
    /// <summary>The Unity version a member first appeared in.</summary>
    [AttributeUsage(AttributeTargets.All, AllowMultiple = false)]
    public sealed class SinceAttribute : Attribute
    {
        public SinceAttribute(string version) { }
    }

    static class Stub
    {
        internal static Exception Fail() { return new NotSupportedException("a reference declaration: it never runs"); }
    }
}

namespace Unity.Collections
{
    using UnityStubs;

    [Since("2018.1")]
    public enum Allocator { Invalid = 0, None = 1, Temp = 2, TempJob = 3, Persistent = 4 }

    [Since("2018.1")]
    public struct NativeArray<T> : IDisposable where T : struct
    {
        [Since("2018.1")] public T[] ToArray() { throw Stub.Fail(); }
        [Since("2018.1")] public void Dispose() { throw Stub.Fail(); }
    }
}

namespace UnityEngine
{
    using UnityStubs;

    [Since("5.2")]
    public enum RuntimeInitializeLoadType { AfterSceneLoad = 0, BeforeSceneLoad = 1, [Since("2019.2")] SubsystemRegistration = 4 }

    [Since("5.0"), AttributeUsage(AttributeTargets.Method)]
    public sealed class RuntimeInitializeOnLoadMethodAttribute : Attribute
    {
        [Since("5.2")] public RuntimeInitializeOnLoadMethodAttribute(RuntimeInitializeLoadType loadType) { }
    }

    [Since("5.1"), AttributeUsage(AttributeTargets.Class)]
    public sealed class CreateAssetMenuAttribute : Attribute
    {
        [Since("5.1")] public string menuName { get; set; }
        [Since("5.1")] public string fileName { get; set; }
    }

    [Since("1.0")]
    public static class Application
    {
        [Since("1.0")] public static bool isEditor { get { throw Stub.Fail(); } }
        [Since("1.0")] public static bool isPlaying { get { throw Stub.Fail(); } }
        [Since("5.0")] public static string productName { get { throw Stub.Fail(); } }
        [Since("5.0")] public static string version { get { throw Stub.Fail(); } }
        [Since("1.0")] public static string temporaryCachePath { get { throw Stub.Fail(); } }
        [Since("1.0")] public static int targetFrameRate { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public static bool runInBackground { get { throw Stub.Fail(); } set { } }
        [Since("5.5")] public static void Quit(int exitCode) { throw Stub.Fail(); }
        [Since("2018.1")] public static event Action quitting { add { } remove { } }
    }

    [Since("1.0")]
    public static class Time
    {
        [Since("2019.2")] public static float captureDeltaTime { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public static float timeScale { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public static float fixedDeltaTime { get { throw Stub.Fail(); } set { } }
    }

    [Since("1.0")]
    public static class QualitySettings
    {
        [Since("1.0")] public static int vSyncCount { get { throw Stub.Fail(); } set { } }
    }

    [Since("1.0")]
    public static class Random
    {
        [Since("5.4")] public static void InitState(int seed) { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public static class Debug
    {
        [Since("1.0")] public static void Log(object message) { throw Stub.Fail(); }
        [Since("1.0")] public static void LogWarning(object message) { throw Stub.Fail(); }
        [Since("1.0")] public static void LogError(object message) { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public static class Mathf
    {
        [Since("1.0")] public static float Clamp(float value, float min, float max) { throw Stub.Fail(); }
        [Since("1.0")] public static int Max(int a, int b) { throw Stub.Fail(); }
        [Since("1.0")] public static int RoundToInt(float f) { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public struct Vector2
    {
        [Since("1.0")] public float x;
        [Since("1.0")] public float y;
        [Since("1.0")] public Vector2(float x, float y) { this.x = x; this.y = y; }
    }

    [Since("1.0")]
    public struct Vector3
    {
        [Since("1.0")] public float x;
        [Since("1.0")] public float y;
        [Since("1.0")] public float z;
    }

    [Since("1.0")]
    public struct Rect
    {
        [Since("1.0")] public Rect(float x, float y, float width, float height) { }
    }

    [Since("1.0"), Flags]
    public enum HideFlags { None = 0, HideInHierarchy = 1, HideAndDontSave = 61 }

    [Since("1.0")]
    public class Object
    {
        [Since("1.0")] public string name { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public HideFlags hideFlags { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public static void Destroy(Object obj) { throw Stub.Fail(); }
        [Since("1.0")] public static void DontDestroyOnLoad(Object target) { throw Stub.Fail(); }
        [Since("1.0")] public static bool operator ==(Object x, Object y) { throw Stub.Fail(); }
        [Since("1.0")] public static bool operator !=(Object x, Object y) { throw Stub.Fail(); }
        [Since("1.0")] public static implicit operator bool(Object exists) { throw Stub.Fail(); }
        public override bool Equals(object other) { throw Stub.Fail(); }
        public override int GetHashCode() { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public sealed class GameObject : Object
    {
        [Since("1.0")] public GameObject(string name) { }
        [Since("1.0")] public T AddComponent<T>() where T : Component { throw Stub.Fail(); }
        [Since("1.0")] public T[] GetComponents<T>() { throw Stub.Fail(); }
        [Since("1.0")] public Transform transform { get { throw Stub.Fail(); } }
        [Since("4.0")] public bool activeSelf { get { throw Stub.Fail(); } }
        [Since("1.0")] public string tag { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public int layer { get { throw Stub.Fail(); } set { } }
    }

    [Since("1.0")]
    public class Component : Object
    {
        [Since("1.0")] public GameObject gameObject { get { throw Stub.Fail(); } }
        [Since("1.0")] public Transform transform { get { throw Stub.Fail(); } }
    }

    [Since("1.0")]
    public class Transform : Component, IEnumerable
    {
        [Since("1.0")] public int childCount { get { throw Stub.Fail(); } }
        [Since("1.0")] public Transform GetChild(int index) { throw Stub.Fail(); }
        [Since("1.0")] public Transform parent { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public Vector3 position { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public Vector3 localPosition { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public Vector3 eulerAngles { get { throw Stub.Fail(); } set { } }
        [Since("1.0")] public Vector3 localScale { get { throw Stub.Fail(); } set { } }
        public IEnumerator GetEnumerator() { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public class Behaviour : Component { }

    [Since("1.0")]
    public sealed class Coroutine { }

    [Since("1.0")]
    public class YieldInstruction { }

    [Since("1.0")]
    public sealed class WaitForSeconds : YieldInstruction
    {
        [Since("1.0")] public WaitForSeconds(float seconds) { }
    }

    [Since("1.0")]
    public class MonoBehaviour : Behaviour
    {
        [Since("1.0")] public Coroutine StartCoroutine(IEnumerator routine) { throw Stub.Fail(); }
        [Since("1.0")] public void StopCoroutine(Coroutine routine) { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public class ScriptableObject : Object
    {
        [Since("1.0")] public static T CreateInstance<T>() where T : ScriptableObject { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public static class Resources
    {
        [Since("1.0")] public static T Load<T>(string path) where T : Object { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public static class Screen
    {
        [Since("1.0")] public static int width { get { throw Stub.Fail(); } }
        [Since("1.0")] public static int height { get { throw Stub.Fail(); } }
    }

    [Since("1.0")]
    public static class SystemInfo
    {
        [Since("5.0")] public static Rendering.GraphicsDeviceType graphicsDeviceType { get { throw Stub.Fail(); } }
        [Since("2018.2")] public static bool supportsAsyncGPUReadback { get { throw Stub.Fail(); } }
        [Since("2017.2")] public static bool graphicsUVStartsAtTop { get { throw Stub.Fail(); } }
    }

    [Since("1.0")]
    public enum TextureFormat { RGBA32 = 4 }

    [Since("1.0")]
    public class Texture : Object { }

    [Since("1.0")]
    public sealed class Texture2D : Texture
    {
        [Since("1.0")] public Texture2D(int width, int height) { }
        [Since("1.0")] public Texture2D(int width, int height, TextureFormat textureFormat, bool mipChain) { }
        [Since("1.0")] public void ReadPixels(Rect source, int destX, int destY) { throw Stub.Fail(); }
        [Since("1.0")] public void Apply() { throw Stub.Fail(); }
        [Since("5.0")] public byte[] GetRawTextureData() { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public class RenderTexture : Texture
    {
        [Since("1.0")] public static RenderTexture GetTemporary(int width, int height, int depthBuffer) { throw Stub.Fail(); }
        [Since("1.0")] public static void ReleaseTemporary(RenderTexture temp) { throw Stub.Fail(); }
        [Since("1.0")] public static RenderTexture active { get { throw Stub.Fail(); } set { } }
    }

    [Since("2017.1")]
    public static class ImageConversion
    {
        [Since("2019.3")] public static byte[] EncodeArrayToJPG(Array array, Experimental.Rendering.GraphicsFormat format, uint width, uint height, uint rowBytes = 0, int quality = 75) { throw Stub.Fail(); }
        [Since("2019.3")] public static byte[] EncodeArrayToPNG(Array array, Experimental.Rendering.GraphicsFormat format, uint width, uint height, uint rowBytes = 0) { throw Stub.Fail(); }
        [Since("2017.1")] public static bool LoadImage(this Texture2D tex, byte[] data) { throw Stub.Fail(); }
    }

    [Since("2017.1")]
    public static class ScreenCapture
    {
        [Since("2019.1")] public static void CaptureScreenshotIntoRenderTexture(RenderTexture renderTexture) { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public static class Graphics
    {
        [Since("2017.3")] public static void Blit(Texture source, RenderTexture dest, Vector2 scale, Vector2 offset) { throw Stub.Fail(); }
    }

    [Since("1.0")]
    public sealed class GUILayoutOption { }

    [Since("1.0")]
    public static class GUILayout
    {
        [Since("1.0")] public static void Label(Texture image, params GUILayoutOption[] options) { throw Stub.Fail(); }
    }
}

namespace UnityEngine.Experimental.Rendering
{
    using UnityStubs;

    [Since("2018.2")]
    public enum GraphicsFormat { R8G8B8A8_SRGB = 8 }
}

namespace UnityEngine.Rendering
{
    using System;
    using UnityStubs;

    [Since("5.0")]
    public enum GraphicsDeviceType { Null = 4 }

    [Since("2018.2")]
    public struct AsyncGPUReadbackRequest
    {
        [Since("2018.2")] public bool hasError { get { throw Stub.Fail(); } }
        [Since("2018.2")] public Unity.Collections.NativeArray<T> GetData<T>(int layer = 0) where T : struct { throw Stub.Fail(); }
    }

    [Since("2018.2")]
    public static class AsyncGPUReadback
    {
        [Since("2019.1")] public static AsyncGPUReadbackRequest Request(Texture src, int mipIndex, TextureFormat dstFormat, Action<AsyncGPUReadbackRequest> callback) { throw Stub.Fail(); }
    }
}

namespace UnityEngine.Events
{
    using UnityStubs;

    [Since("4.6")] public delegate void UnityAction<T0>(T0 arg0);
    [Since("4.6")] public delegate void UnityAction<T0, T1>(T0 arg0, T1 arg1);
}

namespace UnityEngine.SceneManagement
{
    using UnityStubs;

    [Since("5.3")]
    public enum LoadSceneMode { Single = 0, Additive = 1 }

    [Since("2018.3")]
    public struct LoadSceneParameters
    {
        [Since("2018.3")] public LoadSceneParameters(LoadSceneMode mode) { }
    }

    [Since("5.3")]
    public struct Scene
    {
        [Since("5.3")] public string name { get { throw Stub.Fail(); } }
        [Since("5.3")] public string path { get { throw Stub.Fail(); } }
        [Since("5.3")] public int buildIndex { get { throw Stub.Fail(); } }
        [Since("5.3")] public bool isLoaded { get { throw Stub.Fail(); } }
        [Since("5.3")] public GameObject[] GetRootGameObjects() { throw Stub.Fail(); }
    }

    [Since("5.3")]
    public static class SceneManager
    {
        [Since("5.3")] public static int sceneCount { get { throw Stub.Fail(); } }
        [Since("5.3")] public static Scene GetSceneAt(int index) { throw Stub.Fail(); }
        [Since("5.3")] public static Scene GetActiveScene() { throw Stub.Fail(); }
        [Since("5.3")] public static void LoadScene(int sceneBuildIndex) { throw Stub.Fail(); }
        [Since("5.4")] public static event Events.UnityAction<Scene, LoadSceneMode> sceneLoaded { add { } remove { } }
        [Since("5.4")] public static event Events.UnityAction<Scene> sceneUnloaded { add { } remove { } }
    }
}

namespace UnityEngine.LowLevel
{
    using System;
    using UnityStubs;

    [Since("2019.3")]
    public struct PlayerLoopSystem
    {
        [Since("2019.3")] public delegate void UpdateFunction();
        [Since("2019.3")] public Type type;
        [Since("2019.3")] public PlayerLoopSystem[] subSystemList;
        [Since("2019.3")] public UpdateFunction updateDelegate;
    }

    [Since("2019.3")]
    public static class PlayerLoop
    {
        [Since("2019.3")] public static PlayerLoopSystem GetCurrentPlayerLoop() { throw Stub.Fail(); }
        [Since("2019.3")] public static void SetPlayerLoop(PlayerLoopSystem loop) { throw Stub.Fail(); }
    }
}

namespace UnityEngine.PlayerLoop
{
    using UnityStubs;

    [Since("2019.3")] public struct Update { }
    [Since("2019.3")] public struct PostLateUpdate { }
}
