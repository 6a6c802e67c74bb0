using System.Collections;
using System.Collections.Generic;
using System.Threading.Tasks;
using Crosscode.Cappy;
using UnityEngine;

namespace Crosscode.Cappy.Samples
{
    /// <summary>
    /// Authored scenarios and events: put this on an object of the first
    /// scene. What Awake registers is in the registry crosscode-mcp gets,
    /// so an agent can run_scenario "boss_fight" with a difficulty, and its
    /// events (with frames at their moments) come back on the timeline.
    /// Play, pictures, recordings and replays need none of this.
    /// </summary>
    public sealed class BossScenarios : MonoBehaviour
    {
        void Awake()
        {
            Cappy.RegisterScenario("boss_fight",
                new ScenarioInfo { Name = "Boss fight", Description = "The boss enters and fights in phases." }
                    .Param("difficulty", Parameter.Integer(1, 3, 2, "1 easy, 3 hard")),
                BossFight);
            Cappy.RegisterScenario("load_level",
                new ScenarioInfo { Name = "Load a level" }
                    .Param("level", Parameter.String("forest", "which level", "forest", "caves")),
                LoadLevel);
        }

        // A coroutine: game time, held between an agent's steps and paced by
        // the package; op.Complete sets the summary (the end completes too).
        IEnumerator BossFight(Operation op)
        {
            int difficulty = (int)(double)op.Parameters["difficulty"];
            op.Emit("BOSS_INTRO", new Dictionary<string, object> { { "difficulty", difficulty } }, 1200);
            yield return new WaitForSeconds(1.2f);
            for (int phase = 1; phase <= difficulty; phase++)
            {
                op.Emit("BOSS_PHASE", new Dictionary<string, object> { { "phase", phase } });
                op.CaptureFrame("BOSS_PHASE");
                yield return op.Wait(1000); // 1000 ms of the operation's game time
            }
            op.Complete(new Dictionary<string, object> { { "outcome", "won" } });
        }

        // An async method: its continuations run on the main thread. A
        // CappyFailure fails the scenario with the game's own code.
        async Task LoadLevel(Operation op)
        {
            string level = (string)op.Parameters["level"];
            if (level == "caves" && !Application.isEditor) throw new CappyFailure("LEVEL_MISSING", "the caves are not in this build");
            await op.Delay(500);
            op.Emit("LEVEL_LOADED", new Dictionary<string, object> { { "level", level } });
        }
    }
}
