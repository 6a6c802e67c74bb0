using System;
using System.Collections;
using System.Collections.Generic;

namespace Crosscode.Cappy
{
    // What the core asks of an engine. The engine layer (Runtime/Unity, or a
    // console game's loop) implements these; the core holds every rule of
    // the protocol. All of them are called on the game's main thread, in
    // BeginFrame and EndFrame, unless a member says otherwise.

    /// <summary>
    /// The game's time. The game runs in frames of a fixed step of game
    /// time; the core decides, at the end of each frame, whether the next
    /// one runs its step or is held (no game time passes in it).
    /// </summary>
    public interface IGameClock
    {
        /// <summary>Game time one frame runs, in ms (Unity: Time.captureDeltaTime).</summary>
        double StepMs { get; }
        /// <summary>
        /// From the next frame on, hold the game (no game time passes:
        /// Unity's Time.timeScale 0) or let it run one step a frame.
        /// </summary>
        void Hold(bool hold);
        /// <summary>
        /// How many frames a second to show: 0 as fast as the machine goes
        /// (an agent's steps, replays), else that rate (a player's
        /// recording and scenarios at their timeScale; 60 while held).
        /// </summary>
        void Pace(double framesPerSecond);
    }

    /// <summary>The game's actions, as an agent sets them.</summary>
    public interface IGameInput
    {
        /// <summary>The actions an agent may set (names unique, at most 256).</summary>
        IList<GameAction> Actions();
        /// <summary>
        /// Sets inputs for the next frame to see, as a player's devices
        /// would (called at the end of a frame; a button stays as set until
        /// a later change). Pointer coordinates are in the game's screen
        /// pixels, from the top left.
        /// </summary>
        void Apply(IList<InputValue> changes);
        /// <summary>Releases everything the agent holds (buttons up, axes 0).</summary>
        void ReleaseAll();
        /// <summary>
        /// While true the game reads only the agent's input (an agent plays,
        /// or a replay runs): a player's devices are ignored.
        /// </summary>
        void AgentOnly(bool on);
        /// <summary>
        /// The values a player's devices give the actions in the frame that
        /// is ending, for a player's recording (name to value; buttons,
        /// axes and axis2d only). May leave values out that did not change.
        /// </summary>
        void Sample(IDictionary<string, InputValue> into);
    }

    /// <summary>The game's pictures.</summary>
    public interface IFrameSource
    {
        /// <summary>Whether the game renders (false: a player without graphics).</summary>
        bool Available { get; }
        /// <summary>The game's picture in pixels (pointer coordinates are in these).</summary>
        int ScreenWidth { get; }
        /// <summary>The game's picture in pixels.</summary>
        int ScreenHeight { get; }
        /// <summary>
        /// Takes the picture of the frame that ends now and encodes it as
        /// mime (image/jpeg at quality, or image/png), scaled down to at
        /// most maxWidth wide, then calls done, on any thread, with the
        /// picture or null when it could not. The picture must show this
        /// frame even when done comes frames later.
        /// </summary>
        void Capture(int maxWidth, string mime, int quality, Action<EncodedPicture> done);
        /// <summary>How many captures may be in flight at once (1 or more).</summary>
        int MaxInFlight { get; }
        /// <summary>Whether it encodes mime (image/jpeg, image/png).</summary>
        bool CanEncode(string mime);
    }

    /// <summary>An encoded picture an <see cref="IFrameSource"/> hands back.</summary>
    public sealed class EncodedPicture
    {
        /// <summary>The image file's bytes (a whole JPEG or PNG).</summary>
        public byte[] Data;
        /// <summary>image/jpeg or image/png.</summary>
        public string Mime;
        /// <summary>The picture's size in pixels.</summary>
        public int Width, Height;
    }

    /// <summary>The game's scene, for inspect and the capture config's events.</summary>
    public interface ISceneGraph
    {
        /// <summary>The scene's root objects, in order.</summary>
        IList<ISceneNode> Roots();
        /// <summary>The name of the scene (or scenes) shown, for the empty query.</summary>
        string SceneName { get; }
        /// <summary>
        /// Changes whenever the scene's objects are replaced (Unity: a scene
        /// loaded): the capture config's events are connected again then.
        /// </summary>
        int Generation { get; }
    }

    /// <summary>One object of the scene.</summary>
    public interface ISceneNode
    {
        /// <summary>Its name (paths are names joined with '/').</summary>
        string Name { get; }
        /// <summary>Its children, in order.</summary>
        IList<ISceneNode> Children();
        /// <summary>
        /// What the object is besides its components: active, tag, its
        /// transform (Unity: position, rotation, scale), as name to value
        /// (values the inspect writer turns into JSON).
        /// </summary>
        IDictionary<string, object> Describe();
        /// <summary>Its components, as objects whose public fields inspect reads.</summary>
        IList<object> Components();
        /// <summary>A component's type name, as a path names it (Unity: the type's Name).</summary>
        string ComponentName(object component);
    }

    /// <summary>The game's randomness (capability seed).</summary>
    public interface IGameRandom
    {
        /// <summary>Seeds the game's random numbers (Unity: UnityEngine.Random.InitState).</summary>
        void Seed(long seed);
    }

    /// <summary>
    /// A game that puts itself where a recording starts (capability
    /// resets_itself): Unity's Editor reloads the first scene.
    /// </summary>
    public interface IGameReset
    {
        /// <summary>
        /// Starts the game afresh for a recording or replay: seed first, then
        /// the first scene; calls done on the main thread once the game is
        /// there (frames may pass meanwhile).
        /// </summary>
        void Restart(long seed, Action done);
    }

    /// <summary>
    /// Runs a scenario's coroutine (Unity: StartCoroutine on the package's
    /// object). Its methods are not named Start and Stop: a MonoBehaviour
    /// implements it, and Unity would take a Start for its own message.
    /// </summary>
    public interface ICoroutineRunner
    {
        /// <summary>Starts routine; calls done once it ends (error: what it threw, or null).</summary>
        void Run(IEnumerator routine, Action<Exception> done);
        /// <summary>Stops what Run started for routine (a cancelled scenario).</summary>
        void Cancel(IEnumerator routine);
    }

    /// <summary>Where the core logs (Unity: the console), from any thread.</summary>
    public interface ICappyLog
    {
        void Info(string message);
        void Warn(string message);
        void Error(string message);
    }

    /// <summary>The engine's parts the core drives. Only Clock is required.</summary>
    public sealed class EngineParts
    {
        public IGameClock Clock;
        public IGameInput Input;
        public IFrameSource Frames;
        public ISceneGraph Scene;
        public IGameRandom Random;
        public IGameReset Reset;
        public ICoroutineRunner Runner;
        public ICappyLog Log;
    }
}
