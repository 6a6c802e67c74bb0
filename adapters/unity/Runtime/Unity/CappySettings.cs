using UnityEngine;

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// The package's settings: an optional asset named CappySettings in a
    /// Resources folder (Assets > Create > Cappy > Settings); without one,
    /// the defaults below.
    /// </summary>
    [CreateAssetMenu(menuName = "Cappy/Settings", fileName = "CappySettings")]
    public sealed class CappySettings : ScriptableObject
    {
        /// <summary>Where crosscode-mcp keeps its data when its --data is elsewhere than the repository's git directory (the endpoint file is found there).</summary>
        public string dataFolder = "";
        /// <summary>Connect in the Editor's Play mode when crosscode-mcp runs for the repository.</summary>
        public bool connectInEditor = true;
        /// <summary>Game time a frame runs, in seconds (0: the project's fixed timestep).</summary>
        public float stepSeconds = 0;
        /// <summary>The game's id for crosscode-mcp (empty: the product name, as a slug).</summary>
        public string gameId = "";
        /// <summary>Whether an agent may inspect the scene (objects, transforms, components' public fields).</summary>
        public bool inspect = true;
        /// <summary>The JPEG quality of pictures, 1 to 100.</summary>
        public int jpegQuality = 80;
        /// <summary>A player quits when crosscode-mcp's connection ends (it launched the player).</summary>
        public bool quitOnDisconnect = true;

        static CappySettings cached;

        /// <summary>The project's settings, or the defaults.</summary>
        public static CappySettings Load()
        {
            if (cached == null) cached = Resources.Load<CappySettings>("CappySettings");
            if (cached == null) cached = CreateInstance<CappySettings>();
            return cached;
        }
    }
}
