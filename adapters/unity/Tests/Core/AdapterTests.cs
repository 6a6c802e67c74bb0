using System;
using System.Collections;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;

namespace Crosscode.Cappy.Tests
{
    // The core's protocol and time, through its interfaces: a fake
    // controller (the transport) and a fake engine (clock, input, frames).
    [TestFixture]
    public class AdapterTests
    {
        [SetUp]
        public void Clean() { Cappy.Reset(); }

        [TearDown]
        public void After() { Cappy.Reset(); }

        static double Num(JsonObject m, string k) { return (double)m[k]; }

        [Test]
        public void HelloAfterTheFirstFrameThenRegistryAndActionsOffTheMainThread()
        {
            Cappy.RegisterScenario("boss", new ScenarioInfo().Param("difficulty", Parameter.Integer(1, 3, 2)), op => (IEnumerator)null);
            var r = new Rig();
            Assert.IsEmpty(r.Wire.Types(), "nothing before the first frame ends");
            Assert.IsTrue(r.Clock.Holding, "held from the start");
            r.Frame();
            var hello = r.Wire.Last("hello");
            Assert.AreEqual("tok", hello["token"]);
            var caps = ((List<object>)hello["capabilities"]).Cast<string>().ToList();
            CollectionAssert.IsSubsetOf(new[] { "scenarios", "freeform_recording", "replay", "time_scale", "seed", "input", "frames" }, caps);
            CollectionAssert.DoesNotContain(caps, "resets_itself");
            CollectionAssert.DoesNotContain(caps, "inspect"); // no scene given
            // welcome is answered on the socket's thread: no frame runs here.
            r.Adapter.Receive("{\"type\":\"welcome\",\"protocol\":1,\"controller\":{\"name\":\"cappy\",\"version\":\"1\"}}");
            CollectionAssert.AreEqual(new[] { "hello", "scenarios", "actions" }, r.Wire.Types());
            var sc = (List<object>)r.Wire.Last("scenarios")["scenarios"];
            Assert.AreEqual("boss", ((JsonObject)sc[0])["id"]);
            var acts = ((List<object>)r.Wire.Last("actions")["actions"]).Cast<JsonObject>().Select(a => a["name"] + ":" + a["kind"]).ToArray();
            CollectionAssert.AreEqual(new[] { "move:axis2d", "jump:button", "pointer:pointer" }, acts);
            // list_scenarios and ping too.
            r.Adapter.Receive("{\"type\":\"list_scenarios\"}");
            r.Adapter.Receive("{\"type\":\"ping\",\"nonce\":\"n1\"}");
            Assert.AreEqual("n1", r.Wire.Last("pong")["nonce"]);
            Assert.AreEqual(2, r.Wire.OfType("scenarios").Count);
        }

        [Test]
        public void NoScenariosNoScenariosCapabilityAndTheRegistryFollowsChanges()
        {
            var r = new Rig();
            r.Welcome();
            var caps = ((List<object>)r.Wire.Last("hello")["capabilities"]).Cast<string>().ToList();
            CollectionAssert.DoesNotContain(caps, "scenarios");
            Assert.AreEqual(0, ((List<object>)r.Wire.Last("scenarios")["scenarios"]).Count);
            Cappy.RegisterScenario("late", null, op => { });
            r.Frame();
            Assert.AreEqual("late", ((JsonObject)((List<object>)r.Wire.Last("scenarios")["scenarios"])[0])["id"]);
        }

        [Test]
        public void RejectAndAWrongProtocolEndTheConnection()
        {
            var r = new Rig();
            string why = null;
            r.Adapter.Disconnected += w => why = w;
            r.Frame();
            r.Send("{\"type\":\"reject\",\"code\":\"PROTOCOL_UNAUTHENTICATED\",\"message\":\"wrong token\"}");
            r.Frame();
            Assert.IsTrue(r.Adapter.Ended);
            StringAssert.Contains("PROTOCOL_UNAUTHENTICATED", why);
            Assert.IsTrue(r.Wire.Closed);

            var r2 = new Rig();
            r2.Frame();
            r2.Send("{\"type\":\"welcome\",\"protocol\":2,\"controller\":{\"name\":\"cappy\",\"version\":\"9\"}}");
            r2.Frame();
            Assert.IsTrue(r2.Adapter.Ended);
            StringAssert.Contains("protocol 2", r2.Adapter.EndReason);
        }

        [Test]
        public void AgentPlayHoldsTheGameAndRunsExactlyEachStep()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\",\"seed\":7}");
            r.Run(5);
            Assert.AreEqual("started", r.Wire.Types().Last());
            Assert.AreEqual(0, r.TicksRun, "an agent's recording starts held");
            CollectionAssert.Contains(r.Random.Seeds, 7L);
            Assert.IsTrue(r.Input.AgentOnlyOn);

            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[],\"ms\":0}");
            r.Until(() => r.Wire.OfType("stepped").Count == 1);
            var s1 = r.Wire.Last("stepped");
            Assert.AreEqual(0.0, Num(s1, "t"));
            Assert.AreEqual(0, r.TicksRun);

            // 100 ms at 20 ms a frame: exactly five frames, then held.
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s2\",\"actions\":[{\"name\":\"move\",\"x\":1,\"y\":0}],\"ms\":100}");
            r.Until(() => r.Wire.OfType("stepped").Count == 2);
            Assert.AreEqual(5, r.TicksRun);
            Assert.AreEqual(100.0, Num(r.Wire.Last("stepped"), "simT"));
            r.Run(50); // the agent thinks: nothing runs
            Assert.AreEqual(5, r.TicksRun);

            // Steps of 30 ms: frames by the steps' total (rounded), none lost.
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s3\",\"actions\":[],\"ms\":30}");
            r.Until(() => r.Wire.OfType("stepped").Count == 3);
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s4\",\"actions\":[],\"ms\":30}");
            r.Until(() => r.Wire.OfType("stepped").Count == 4);
            Assert.AreEqual(8, r.TicksRun, "100+30+30 ms is 8 frames of 20");
            Assert.AreEqual(160.0, Num(r.Wire.Last("stepped"), "simT"));

            r.Send("{\"type\":\"stop\",\"op\":\"a1\"}");
            r.Until(() => r.Wire.OfType("completed").Count == 1);
            var done = r.Wire.Last("completed");
            var rec = Recording.Decode(ReplayPayload.Read(done["replay"]));
            Assert.AreEqual(8, rec.Ticks);
            Assert.AreEqual(7, rec.Seed);
            Assert.AreEqual("agent", rec.Control);
            CollectionAssert.AreEqual(new long[] { 0, 5, 7, 8 }, rec.Steps);
            Assert.AreEqual(1, rec.Inputs.Count);
            Assert.AreEqual(1, rec.Inputs[0].Key, "the move went in for the first frame");
            Assert.IsFalse(r.Input.AgentOnlyOn, "the player's devices are back");
            Assert.IsTrue(r.Clock.Holding);
        }

        [Test]
        public void ALooksInputGoesInWithTheNextStepThatRuns()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\"}");
            r.Frame();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[{\"name\":\"jump\",\"pressed\":true}],\"ms\":0}");
            r.Until(() => r.Wire.OfType("stepped").Count == 1);
            Assert.IsEmpty(r.Input.Applied, "a look applies nothing to the held game");
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s2\",\"actions\":[{\"name\":\"move\",\"x\":0,\"y\":-1}],\"ms\":40}");
            r.Until(() => r.Wire.OfType("stepped").Count == 2);
            Assert.AreEqual(1, r.Input.Applied.Count);
            StringAssert.Contains("jump", r.Input.Applied[0]);
            StringAssert.Contains("move", r.Input.Applied[0]);
            Assert.AreEqual(2, r.TicksRun);
        }

        [Test]
        public void StepRefusalsKeepThePlayGoing()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"step\",\"op\":\"x\",\"id\":\"s0\",\"actions\":[],\"ms\":10}");
            r.Frame();
            Assert.AreEqual("PROTOCOL_OUT_OF_STATE", r.Wire.Last("step_refused")["code"]);
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\"}");
            r.Frame();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[{\"name\":\"fly\",\"pressed\":true}],\"ms\":10}");
            r.Frame();
            var refused = r.Wire.Last("step_refused");
            Assert.AreEqual("INVALID_INPUT", refused["code"]);
            StringAssert.Contains("move, jump, pointer", (string)refused["message"]);
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s2\",\"actions\":[{\"name\":\"move\",\"x\":2,\"y\":0}],\"ms\":10}");
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s3\",\"actions\":[{\"name\":\"jump\",\"value\":1}],\"ms\":10}");
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s4\",\"actions\":[],\"ms\":10001}");
            r.Frame();
            Assert.AreEqual(4, r.Wire.OfType("step_refused").Count(m => (string)m["code"] == "INVALID_INPUT"));
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s5\",\"actions\":[],\"ms\":1000}");
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s6\",\"actions\":[],\"ms\":10}");
            r.Frame();
            Assert.AreEqual("OPERATION_BUSY", r.Wire.Last("step_refused")["code"]);
            r.Until(() => r.Wire.OfType("stepped").Count == 1);
            Assert.AreEqual("s5", r.Wire.Last("stepped")["id"]);
        }

        [Test]
        public void OperationRefusals()
        {
            Cappy.RegisterScenario("boss", new ScenarioInfo().Param("difficulty", Parameter.Integer(1, 3, 2)).Param("hero", Parameter.String(null, null, "knight", "mage").MustGive()), op => { });
            var r = new Rig();
            r.Welcome();
            Action<string, string> expect = (msg, code) =>
            {
                r.Wire.Clear();
                r.Send(msg);
                r.Frame();
                Assert.AreEqual(code, r.Wire.Last("failed")["code"], msg);
            };
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o1\",\"scenario\":\"dragon\"}", "SCENARIO_NOT_FOUND");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o2\",\"scenario\":\"boss\",\"parameters\":{\"difficulty\":2}}", "INVALID_PARAMETERS");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o3\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"bard\"}}", "INVALID_PARAMETERS");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o4\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\",\"difficulty\":2.5}}", "INVALID_PARAMETERS");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o5\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\",\"x\":1}}", "INVALID_PARAMETERS");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o6\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\"},\"presentation\":{\"timeScale\":9}}", "PRESENTATION_UNSUPPORTED");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o7\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\"},\"presentation\":{\"camera\":\"drone\"}}", "CAPABILITY_MISSING");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o8\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\"},\"frames\":{\"fps\":99,\"maxWidth\":640,\"formats\":[\"image/png\"]}}", "PROTOCOL_INVALID_MESSAGE");
            expect("{\"type\":\"prepare_scenario\",\"op\":\"o9\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\"},\"frames\":{\"fps\":2,\"maxWidth\":640,\"formats\":[\"image/webp\"]}}", "CAPABILITY_MISSING");
            expect("{\"type\":\"record_start\",\"op\":\"o10\",\"control\":\"robot\"}", "PROTOCOL_INVALID_MESSAGE");
            expect("{\"type\":\"start\",\"op\":\"o11\"}", "PROTOCOL_OUT_OF_STATE");
            expect("{\"type\":\"prepare_replay\",\"op\":\"o12\",\"replay\":{\"kind\":\"inline\",\"encoding\":\"base64\",\"data\":\"e30=\",\"sha256\":\"" + new string('0', 64) + "\"}}", "REPLAY_INVALID");
            var notOurs = ReplayPayload.Make(new Recording { Game = "other", StepMs = 20, Seed = 1 }.Encode(), Recording.Format, null);
            expect("{\"type\":\"prepare_replay\",\"op\":\"o13\",\"replay\":" + Json.Write(notOurs) + "}", "REPLAY_INVALID");
            var otherStep = ReplayPayload.Make(new Recording { Game = "test-game", StepMs = 16, Seed = 1 }.Encode(), Recording.Format, null);
            expect("{\"type\":\"prepare_replay\",\"op\":\"o14\",\"replay\":" + Json.Write(otherStep) + "}", "REPLAY_INVALID");
            expect("{\"type\":\"prepare_replay\",\"op\":\"o15\",\"replay\":{\"kind\":\"s3\",\"sha256\":\"" + new string('0', 64) + "\"}}", "REPLAY_UNSUPPORTED");
            // One operation at a time.
            r.Send("{\"type\":\"prepare_scenario\",\"op\":\"ok\",\"scenario\":\"boss\",\"parameters\":{\"hero\":\"mage\"}}");
            r.Frame();
            Assert.AreEqual("ok", r.Wire.Last("ready")["op"]);
            expect("{\"type\":\"record_start\",\"op\":\"o16\"}", "OPERATION_BUSY");
        }

        [Test]
        public void ScenariosRunOnTheGamesClockAtTheirTimeScale()
        {
            Cappy.RegisterScenario("walk", new ScenarioInfo().Param("ms", Parameter.Number(0, 10000, 100)), Walk);
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"prepare_scenario\",\"op\":\"w1\",\"scenario\":\"walk\",\"presentation\":{\"timeScale\":0.5},\"frames\":{\"fps\":10,\"maxWidth\":160,\"formats\":[\"image/jpeg\",\"image/png\"]}}");
            r.Frame();
            r.Send("{\"type\":\"start\",\"op\":\"w1\"}");
            r.Frame();
            Assert.AreEqual(25.0, r.Clock.Fps, "50 frames a second at half speed: 25");
            r.Until(() => r.Wire.OfType("completed").Count == 1);
            var evs = r.Wire.OfType("event");
            CollectionAssert.AreEqual(new[] { "BEGIN", "END" }, evs.Select(e => (string)e["event"]).ToArray());
            Assert.AreEqual(0.0, Num(evs[0], "t"));
            Assert.AreEqual(200.0, Num(evs[1], "t"), "100 ms of game time at half speed is 200 ms presented");
            Assert.AreEqual(100.0, Num((JsonObject)evs[1]["payload"], "simT"));
            var frames = r.Wire.OfType("frame");
            Assert.IsTrue(frames.Count >= 2 && frames.Count <= 3, "10 fps over 200 ms presented: " + frames.Count);
            Assert.AreEqual(160.0, Num(frames[0], "width"));
            Assert.AreEqual("image/png", frames[0]["mime"], "the game encodes PNG only");
            Assert.IsTrue(r.Wire.Types().IndexOf("completed") > r.Wire.Types().LastIndexOf("frame"), "no frame after the outcome");
            Assert.AreEqual("done", ((JsonObject)r.Wire.Last("completed")["summary"])["result"]);
            Assert.IsTrue(r.Clock.Holding, "held after the operation");
        }

        static IEnumerator Walk(Operation op)
        {
            op.Emit("BEGIN");
            yield return op.Wait((double)op.Parameters["ms"]);
            op.Emit("END");
            op.Complete(new Dictionary<string, object> { { "result", "done" } });
        }

        [Test]
        public void AScenarioThatThrowsFailsWithItsCode()
        {
            Cappy.RegisterScenario("bad", null, Boom);
            Cappy.RegisterScenario("lost", null, Lost);
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"prepare_scenario\",\"op\":\"b1\",\"scenario\":\"bad\"}");
            r.Send("{\"type\":\"start\",\"op\":\"b1\"}");
            r.Until(() => r.Wire.OfType("failed").Count == 1);
            Assert.AreEqual("ADAPTER_ERROR", r.Wire.Last("failed")["code"]);
            StringAssert.Contains("kaboom", (string)r.Wire.Last("failed")["message"]);
            r.Send("{\"type\":\"prepare_scenario\",\"op\":\"b2\",\"scenario\":\"lost\"}");
            r.Send("{\"type\":\"start\",\"op\":\"b2\"}");
            r.Until(() => r.Wire.OfType("failed").Count == 2);
            Assert.AreEqual("HERO_DOWN", r.Wire.Last("failed")["code"]);
        }

        static IEnumerator Boom(Operation op)
        {
            yield return null;
            throw new InvalidOperationException("kaboom");
        }

        static IEnumerator Lost(Operation op)
        {
            yield return op.Wait(40);
            throw new CappyFailure("HERO_DOWN", "the hero fell");
        }

        [Test]
        public void CancelTearsDownAndHolds()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\"}");
            r.Frame();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[{\"name\":\"jump\",\"pressed\":true}],\"ms\":5000}");
            r.Run(10);
            Assert.IsFalse(r.Clock.Holding);
            r.Send("{\"type\":\"cancel\",\"op\":\"a1\"}");
            r.Frame();
            Assert.IsTrue(r.Clock.Holding);
            Assert.IsFalse(r.Input.AgentOnlyOn);
            Assert.IsEmpty(r.Input.Held, "the agent's buttons come up");
            long ticks = r.TicksRun;
            r.Run(20);
            Assert.AreEqual(ticks, r.TicksRun);
            Assert.IsEmpty(r.Wire.OfType("stepped"), "nothing more about a cancelled operation");
            Assert.IsEmpty(r.Wire.OfType("completed"));
        }

        [Test]
        public void PicturesWaitInFlatOutOperationsAndGoInOrderBeforeStepped()
        {
            var r = new Rig();
            r.Frames.Immediate = false;
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\",\"frames\":{\"fps\":10,\"maxWidth\":640,\"formats\":[\"image/png\"]}}");
            r.Frame();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s0\",\"actions\":[],\"ms\":0}");
            r.Until(() => { r.Frames.CompleteAll(); return r.Wire.OfType("stepped").Count == 1; });
            r.Wire.Clear();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[],\"ms\":300}");
            // 10 fps: a frame due every 100 ms of game time; the game waits
            // for each picture rather than running on.
            for (int i = 0; i < 200 && r.Wire.OfType("stepped").Count == 0; i++)
            {
                r.Frame();
                if (i % 7 == 6) r.Frames.CompleteAll();
            }
            Assert.AreEqual(300.0, Num(r.Wire.Last("stepped"), "simT"));
            var types = r.Wire.Types();
            var frames = r.Wire.OfType("frame");
            CollectionAssert.AreEqual(new[] { 100.0, 200.0, 300.0 }, frames.Select(f => Num(f, "t")).ToArray(), "no frame dropped");
            Assert.AreEqual("step", frames.Last()["reason"]);
            Assert.AreEqual(types.Count - 1, types.LastIndexOf("stepped"));
            Assert.AreEqual(types.Count - 2, types.LastIndexOf("frame"), "the step's picture comes just before stepped");
        }

        [Test]
        public void PicturesOutOfOrderAreSentInOrder()
        {
            var r = new Rig();
            r.Frames.Immediate = false;
            r.Frames.InFlightMax = 3;
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\",\"frames\":{\"fps\":25,\"maxWidth\":640,\"formats\":[\"image/png\"]}}");
            r.Frame();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[],\"ms\":120}");
            r.Run(4);
            Assert.IsTrue(r.Frames.Pending.Count >= 2);
            // Complete the later ones first.
            var p = r.Frames.Pending.ToArray();
            r.Frames.Pending.Clear();
            for (int i = p.Length - 1; i >= 0; i--) p[i]();
            r.Until(() => r.Wire.OfType("stepped").Count == 1 || (r.Frames.Pending.Count > 0 && Complete(r)));
            r.Until(() => { r.Frames.CompleteAll(); return r.Wire.OfType("stepped").Count == 1; });
            var ts = r.Wire.OfType("frame").Select(f => Num(f, "t")).ToList();
            CollectionAssert.IsOrdered(ts);
        }

        static bool Complete(Rig r) { r.Frames.CompleteAll(); return false; }

        [Test]
        public void ReplayReproducesTheStepsInputAndPictures()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\",\"seed\":3,\"frames\":{\"fps\":2,\"maxWidth\":640,\"formats\":[\"image/png\"]}}");
            r.Frame();
            var steps = new[]
            {
                "[]|0", "[{\"name\":\"move\",\"x\":1,\"y\":0}]|200", "[{\"name\":\"jump\",\"pressed\":true}]|0",
                "[{\"name\":\"pointer\",\"x\":160,\"y\":90,\"pressed\":true}]|600", "[{\"name\":\"jump\",\"pressed\":false},{\"name\":\"move\",\"x\":0,\"y\":0}]|1000",
            };
            int n = 0;
            foreach (var s in steps)
            {
                var parts = s.Split('|');
                n++;
                r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s" + n + "\",\"actions\":" + parts[0] + ",\"ms\":" + parts[1] + "}");
                r.Until(() => r.Wire.OfType("stepped").Count == n);
            }
            var recorded = r.Input.Applied.ToList();
            var recFrames = r.Wire.OfType("frame").Select(f => Num(f, "t") + "/" + f["reason"]).ToList();
            r.Send("{\"type\":\"stop\",\"op\":\"a1\"}");
            r.Until(() => r.Wire.OfType("completed").Count == 1);
            var replay = r.Wire.Last("completed")["replay"];
            long ticks = r.TicksRun;

            // Replayed by a new game (a new process) at half speed.
            var g = new Rig();
            g.Welcome();
            g.Send("{\"type\":\"prepare_replay\",\"op\":\"r1\",\"replay\":" + Json.Write(replay) + ",\"seed\":3,\"presentation\":{\"timeScale\":0.5},\"frames\":{\"fps\":2,\"maxWidth\":640,\"formats\":[\"image/png\"]}}");
            g.Frame();
            Assert.AreEqual("ready", g.Wire.Types().Last());
            g.Send("{\"type\":\"start\",\"op\":\"r1\"}");
            g.Until(() => g.Wire.OfType("completed").Count == 1);
            Assert.AreEqual(ticks, g.TicksRun, "the same frames");
            CollectionAssert.AreEqual(recorded, g.Input.Applied, "the same input at the same frames");
            CollectionAssert.Contains(g.Random.Seeds, 3L);
            var repFrames = g.Wire.OfType("frame").Select(f => (Num(f, "t") / 2) + "/" + f["reason"]).ToList();
            foreach (var f in recFrames) CollectionAssert.Contains(repFrames, f, "the recording's picture at the same simulation time");
            Assert.IsTrue(g.Clock.Holding);
            Assert.AreEqual(60.0, g.Clock.Fps, "held after the replay");
        }

        [Test]
        public void APlayersRecordingKeepsWhatTheDevicesSetEachFrame()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"p1\"}");
            r.Frame();
            Assert.AreEqual(50.0, r.Clock.Fps, "a player's recording runs in real time");
            r.Run(3);
            r.Input.Player["jump"] = new InputValue { Name = "jump", Kind = ActionKind.Button, Pressed = true };
            r.Run(2);
            r.Input.Player["jump"] = new InputValue { Name = "jump", Kind = ActionKind.Button, Pressed = false };
            r.Run(2);
            r.Send("{\"type\":\"stop\",\"op\":\"p1\"}");
            r.Until(() => r.Wire.OfType("completed").Count == 1);
            var rec = Recording.Decode(ReplayPayload.Read(r.Wire.Last("completed")["replay"]));
            Assert.AreEqual(2, rec.Inputs.Count);
            Assert.AreEqual(rec.Inputs[0].Key + 2, rec.Inputs[1].Key, "pressed for two frames");
            Assert.AreEqual(true, rec.Inputs[0].Value[0].Pressed);

            var g = new Rig();
            g.Welcome();
            g.Send("{\"type\":\"prepare_replay\",\"op\":\"r1\",\"replay\":" + Json.Write(r.Wire.Last("completed")["replay"]) + "}");
            g.Send("{\"type\":\"start\",\"op\":\"r1\"}");
            g.Until(() => g.Wire.OfType("completed").Count == 1);
            Assert.AreEqual(2, g.Input.Applied.Count);
            Assert.IsTrue(g.Input.AgentOnlyOn == false);
            Assert.AreEqual(rec.Ticks, g.TicksRun);
            // Each change goes in at the end of the frame before the one that saw it.
            Assert.AreEqual(rec.Inputs[0].Key - 1, long.Parse(g.Input.Applied[0].Split(':')[0]));
            Assert.AreEqual(rec.Inputs[1].Key - 1, long.Parse(g.Input.Applied[1].Split(':')[0]));
        }

        [Test]
        public void PointerCoordinatesAreTheFramesPixels()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\",\"frames\":{\"fps\":1,\"maxWidth\":160,\"formats\":[\"image/png\"]}}");
            r.Frame();
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[{\"name\":\"pointer\",\"x\":80,\"y\":45,\"pressed\":true}],\"ms\":20}");
            r.Until(() => r.Wire.OfType("stepped").Count == 1);
            var p = r.Input.Held["pointer"];
            Assert.AreEqual(160.0, p.X, "frames 160 wide of a 320-wide screen: twice");
            Assert.AreEqual(90.0, p.Y);
        }

        [Test]
        public void ResetsItselfRestartsBeforeEachRecording()
        {
            int restarts = 0;
            Action done = null;
            var reset = new FakeReset(d => { restarts++; done = d; });
            var r = new Rig(parts => parts.Reset = reset);
            r.Welcome();
            CollectionAssert.Contains((List<object>)r.Wire.Last("hello")["capabilities"], "resets_itself");
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\",\"control\":\"agent\",\"seed\":9}");
            r.Run(3);
            Assert.AreEqual(1, restarts);
            r.Send("{\"type\":\"step\",\"op\":\"a1\",\"id\":\"s1\",\"actions\":[],\"ms\":40}");
            r.Run(5);
            Assert.IsEmpty(r.Wire.OfType("stepped"), "no step before the game is back at its start");
            done();
            r.Until(() => r.Wire.OfType("stepped").Count == 1);
            Assert.AreEqual(2, r.TicksRun);
            Assert.AreEqual(9L, r.Random.Seeds.Last());
        }

        sealed class FakeReset : IGameReset
        {
            readonly Action<Action> onRestart;
            public FakeReset(Action<Action> onRestart) { this.onRestart = onRestart; }
            public void Restart(long seed, Action done) { onRestart(done); }
        }

        [Test]
        public void PingsAreAnsweredWhileTheMainThreadIsBusy()
        {
            var r = new Rig();
            r.Welcome();
            // No frame runs (the main thread is stuck in a long load); the
            // socket's thread still answers.
            var t = new System.Threading.Thread(() =>
            {
                for (int i = 0; i < 3; i++) r.Adapter.Receive("{\"type\":\"ping\",\"nonce\":\"p" + i + "\"}");
            });
            t.Start();
            t.Join();
            CollectionAssert.AreEqual(new[] { "p0", "p1", "p2" }, r.Wire.OfType("pong").Select(m => (string)m["nonce"]).ToArray());
        }

        [Test]
        public void AnErrorAboutTheOperationStopsIt()
        {
            var r = new Rig();
            r.Welcome();
            r.Send("{\"type\":\"record_start\",\"op\":\"a1\"}");
            r.Run(3);
            r.Send("{\"type\":\"error\",\"code\":\"PROTOCOL_OUT_OF_STATE\",\"message\":\"x\",\"op\":\"a1\"}");
            r.Run(3);
            Assert.IsTrue(r.Clock.Holding);
            Assert.IsNull(r.Adapter.Current);
        }

        [Test]
        public void TheSelfCheckPlaysALookAndAStepAndReportsWhatItSaw()
        {
            var clock = new FakeClock();
            var frames = new FakeFrames();
            var parts = new EngineParts { Clock = clock, Input = new FakeInput(), Frames = frames, Random = new FakeRandom(), Log = new FakeLog() };
            var check = new SelfCheck(parts, "g", new[] { "a warning of the engine layer" });
            SelfCheck.Report report = null;
            check.Run(r => report = r);
            for (int i = 0; i < 5000 && report == null; i++)
            {
                check.Adapter.BeginFrame();
                check.Adapter.EndFrame();
                System.Threading.Thread.Sleep(1); // the check's controller answers from other threads
            }
            Assert.IsNotNull(report, "the check did not finish");
            CollectionAssert.AreEqual(new[] { "a warning of the engine layer" }, report.Problems);
            Assert.IsFalse(report.Ok);
            Assert.AreEqual(500.0, report.SimT);
            Assert.AreEqual(2, report.Pictures.Count, "the look's picture and the step's");
            CollectionAssert.Contains(report.Actions, "move (axis2d)");
            CollectionAssert.Contains(report.Capabilities, "frames");
            Assert.Greater(report.ReplayBytes, 0);

            var bare = new SelfCheck(new EngineParts { Clock = new FakeClock(), Log = new FakeLog() }, "g", null);
            report = null;
            bare.Run(r => report = r);
            for (int i = 0; i < 5000 && report == null; i++)
            {
                bare.Adapter.BeginFrame();
                bare.Adapter.EndFrame();
                System.Threading.Thread.Sleep(1);
            }
            Assert.IsNotNull(report);
            Assert.IsFalse(report.Ok);
            StringAssert.Contains("no input capability", string.Join("\n", report.Problems.ToArray()));
            StringAssert.Contains("no frames capability", string.Join("\n", report.Problems.ToArray()));
        }
    }
}
