using UnityEngine;

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// The game's time for the core: every frame runs one fixed step of game
    /// time (Time.captureDeltaTime, equal to the physics step, so each frame
    /// is one FixedUpdate), whatever the wall clock says; holding sets
    /// Time.timeScale to 0 (the game's own scale comes back on release).
    /// Pacing is Application.targetFrameRate, with vSync off.
    /// </summary>
    public sealed class UnityClock : IGameClock
    {
        readonly float step;
        float gameScale = 1;
        bool held;

        /// <summary>A clock of the settings' step (default: the project's fixed timestep).</summary>
        public UnityClock(CappySettings settings)
        {
            step = settings.stepSeconds > 0 ? settings.stepSeconds : Time.fixedDeltaTime;
            Time.fixedDeltaTime = step;
            Time.captureDeltaTime = step;
            QualitySettings.vSyncCount = 0;
            Application.runInBackground = true; // an unfocused player must not stall
        }

        /// <inheritdoc/>
        public double StepMs { get { return step * 1000.0; } }

        /// <inheritdoc/>
        public void Hold(bool hold)
        {
            if (hold == held) return;
            held = hold;
            if (hold)
            {
                gameScale = Time.timeScale; // the game's own (0 when it paused itself)
                Time.timeScale = 0;
            }
            else Time.timeScale = gameScale;
        }

        /// <inheritdoc/>
        public void Pace(double framesPerSecond)
        {
            Application.targetFrameRate = framesPerSecond <= 0 ? -1 : Mathf.Max(1, Mathf.RoundToInt((float)framesPerSecond));
        }

        /// <summary>Lets the game run as it would without the package (the controller is gone).</summary>
        public void Release()
        {
            Hold(false);
            Time.captureDeltaTime = 0;
            Application.targetFrameRate = -1;
        }
    }
}
