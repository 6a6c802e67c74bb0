using System;
using System.Collections.Generic;
using System.IO;
using NUnit.Framework;

namespace Crosscode.Cappy.Tests
{
    [TestFixture]
    public class ChecksTests
    {
        [TestCase("boss_fight", null)]
        [TestCase("Boss fight", null)]
        [TestCase("", "required")]
        [TestCase(" boss", "leading or trailing")]
        [TestCase("boss  fight", "double space")]
        [TestCase("boss\tfight", "control")]
        [TestCase("boss\u200bfight", "invisible")]
        [TestCase("boss\u202efight", "invisible")]
        public void Ids(string id, string why)
        {
            string got = Checks.Id(id);
            if (why == null) Assert.IsNull(got);
            else StringAssert.Contains(why, got);
        }

        [Test]
        public void IdsAreCountedInBytes()
        {
            Assert.IsNull(Checks.Id(new string('é', 128)));
            StringAssert.Contains("too long", Checks.Id(new string('é', 129)));
            Assert.AreEqual(new string('é', 10), Checks.Cap(new string('é', 20), 21));
        }

        static readonly Dictionary<string, Parameter> Boss = new Dictionary<string, Parameter>
        {
            { "difficulty", Parameter.Integer(1, 3, 2) },
            { "hero", Parameter.String(null, null, "knight", "mage").MustGive() },
            { "speed", Parameter.Number(0.1, 4) },
            { "music", Parameter.Boolean(false) },
        };

        [Test]
        public void ParametersAreResolvedWithTheirDefaults()
        {
            var args = (JsonObject)Json.Parse("{\"hero\":\"mage\",\"speed\":0.5}");
            var got = Checks.Resolve("boss", Boss, args);
            Assert.AreEqual("mage", got["hero"]);
            Assert.AreEqual(2.0, got["difficulty"]);
            Assert.AreEqual(false, got["music"]);
            Assert.AreEqual(0.5, got["speed"]);
        }

        [TestCase("{}", "hero is required")]
        [TestCase("{\"hero\":\"bard\"}", "must be one of [\"knight\",\"mage\"]")]
        [TestCase("{\"hero\":\"mage\",\"difficulty\":4}", "at most 3")]
        [TestCase("{\"hero\":\"mage\",\"difficulty\":1.5}", "integer")]
        [TestCase("{\"hero\":\"mage\",\"difficulty\":\"2\"}", "number")]
        [TestCase("{\"hero\":\"mage\",\"music\":1}", "boolean")]
        [TestCase("{\"hero\":\"mage\",\"wings\":true}", "no parameter \"wings\"")]
        public void BadParametersAreRefused(string args, string why)
        {
            var e = Assert.Throws<CappyFailure>(() => Checks.Resolve("boss", Boss, (JsonObject)Json.Parse(args)));
            Assert.AreEqual(Codes.InvalidParameters, e.Code);
            StringAssert.Contains(why, e.Message);
        }

        [Test]
        public void ParameterDescriptionsAreChecked()
        {
            Assert.IsNull(Checks.ParameterSpec("difficulty", Parameter.Integer(1, 3, 2)));
            StringAssert.Contains("default", Checks.ParameterSpec("d", Parameter.Integer(1, 3, 9)));
            StringAssert.Contains("minimum exceeds maximum", Checks.ParameterSpec("d", Parameter.Number(3, 1)));
            StringAssert.Contains("type", Checks.ParameterSpec("d", new Parameter { Type = "float" }));
            Assert.Throws<ArgumentException>(() => Cappy.RegisterScenario("bad  id", null, op => { }));
        }

        static readonly List<GameAction> Declared = new List<GameAction>
        {
            new GameAction("move", ActionKind.Axis2D, null),
            new GameAction("fire", ActionKind.Button, null),
            new GameAction("throttle", ActionKind.Axis, null),
            new GameAction("pointer", ActionKind.Pointer, null),
            new GameAction("chat", ActionKind.Text, null),
        };

        [Test]
        public void StepInputsOfEachKind()
        {
            var got = Checks.StepInputs(Json.Parse("[{\"name\":\"move\",\"x\":1,\"y\":-0.5},{\"name\":\"fire\",\"pressed\":true},{\"name\":\"throttle\",\"value\":0.25},{\"name\":\"pointer\",\"x\":10,\"y\":20,\"button\":\"right\",\"pressed\":false},{\"name\":\"chat\",\"text\":\"gg\"}]"), Declared);
            Assert.AreEqual(5, got.Count);
            Assert.AreEqual(-0.5, got[0].Y);
            Assert.AreEqual(true, got[1].Pressed);
            Assert.AreEqual(0.25, got[2].Value);
            Assert.AreEqual("right", got[3].Button);
            Assert.AreEqual(false, got[3].Pressed);
            Assert.AreEqual("gg", got[4].Text);
        }

        [TestCase("[{\"name\":\"jump\",\"pressed\":true}]", "unknown action \"jump\"; the game's actions are move, fire, throttle, pointer, chat")]
        [TestCase("[{\"name\":\"move\",\"x\":1.5,\"y\":0}]", "from -1 to 1")]
        [TestCase("[{\"name\":\"move\",\"x\":1}]", "y: required")]
        [TestCase("[{\"name\":\"fire\"}]", "pressed: required")]
        [TestCase("[{\"name\":\"fire\",\"pressed\":true,\"value\":1}]", "a button action has no value")]
        [TestCase("[{\"name\":\"pointer\",\"x\":5000,\"y\":0}]", "4096")]
        [TestCase("[{\"name\":\"pointer\",\"x\":1,\"y\":0,\"button\":\"thumb\"}]", "left, middle or right")]
        [TestCase("[{\"name\":\"chat\"}]", "text: required")]
        [TestCase("{}", "must be a list")]
        public void BadStepInputsAreRefused(string actions, string why)
        {
            var e = Assert.Throws<CappyFailure>(() => Checks.StepInputs(Json.Parse(actions), Declared));
            Assert.AreEqual(Codes.InvalidInput, e.Code);
            StringAssert.Contains(why, e.Message);
        }

        [Test]
        public void PresentationAndFrames()
        {
            Func<string, bool> all = c => true, none = c => false;
            Assert.DoesNotThrow(() => Checks.Presentation((JsonObject)Json.Parse("{\"timeScale\":0.5,\"mood\":\"rain\"}"), all));
            Assert.AreEqual(Codes.PresentationUnsupported, Assert.Throws<CappyFailure>(() => Checks.Presentation((JsonObject)Json.Parse("{\"timeScale\":5}"), all)).Code);
            Assert.AreEqual(Codes.PresentationUnsupported, Assert.Throws<CappyFailure>(() => Checks.Presentation((JsonObject)Json.Parse("{\"camera\":\"\"}"), all)).Code);
            Assert.AreEqual(Codes.CapabilityMissing, Assert.Throws<CappyFailure>(() => Checks.Presentation((JsonObject)Json.Parse("{\"camera\":\"top\"}"), none)).Code);
            var f = Checks.Frames(Json.Parse("{\"fps\":2,\"maxWidth\":640,\"formats\":[\"image/jpeg\",\"image/png\"]}"));
            Assert.AreEqual(Wire.MimeJpeg, f.ChooseMime(m => true));
            Assert.AreEqual(Wire.MimePng, f.ChooseMime(m => m == Wire.MimePng));
            Assert.IsNull(f.ChooseMime(m => false));
            Assert.Throws<CappyFailure>(() => Checks.Frames(Json.Parse("{\"fps\":2,\"maxWidth\":8,\"formats\":[\"image/png\"]}")));
            Assert.Throws<CappyFailure>(() => Checks.Frames(Json.Parse("{\"fps\":0,\"maxWidth\":640,\"formats\":[\"image/png\"]}")));
            Assert.Throws<CappyFailure>(() => Checks.Frames(Json.Parse("{\"fps\":2,\"maxWidth\":640,\"formats\":[]}")));
        }

        [Test]
        public void TheGamesOwnActionsAreChecked()
        {
            Assert.DoesNotThrow(() => Checks.Actions(Declared));
            Assert.Throws<ArgumentException>(() => Checks.Actions(new List<GameAction> { new GameAction("a", "button", null), new GameAction("a", "button", null) }));
            Assert.Throws<ArgumentException>(() => Checks.Actions(new List<GameAction> { new GameAction("a", "lever", null) }));
            Assert.Throws<ArgumentException>(() => Checks.Actions(new List<GameAction> { new GameAction(" a", "button", null) }));
        }

        [Test]
        public void PicturesAreCheckedAsTheControllerChecksThem()
        {
            var png = new EncodedPicture { Data = FakeFrames.Png(64, 36), Mime = Wire.MimePng, Width = 64, Height = 36 };
            Assert.IsNull(PictureCheck.Why(png, Wire.MimePng, 640));
            StringAssert.Contains("wide", PictureCheck.Why(png, Wire.MimePng, 32));
            StringAssert.Contains("image/jpeg was asked", PictureCheck.Why(png, Wire.MimeJpeg, 640));
            png.Width = 65;
            StringAssert.Contains("not the 65x36", PictureCheck.Why(png, Wire.MimePng, 640));
            // A JPEG's size is in its frame header (SOF0), after other segments.
            var jpeg = new byte[] { 0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 36, 0, 64, 3, 0, 0, 0, 0, 0 };
            int w, h;
            Assert.IsTrue(PictureCheck.Size(jpeg, Wire.MimeJpeg, out w, out h));
            Assert.AreEqual(64, w);
            Assert.AreEqual(36, h);
            Assert.IsFalse(PictureCheck.Size(jpeg, Wire.MimePng, out w, out h));
            var big = new EncodedPicture { Data = new byte[Wire.MaxFrameBytes + 1], Mime = Wire.MimePng, Width = 1, Height = 1 };
            StringAssert.Contains("1 MiB", PictureCheck.Why(big, Wire.MimePng, 640));
        }

        [Test]
        public void FramesKeepToTheirRate()
        {
            var p = new FramePacer(2); // a slot every 500 ms
            Assert.IsTrue(p.Due(0)); p.Took(0);
            Assert.IsFalse(p.Due(499));
            Assert.IsTrue(p.Due(500)); p.Took(500);
            Assert.IsTrue(p.Due(1700), "a skipped slot is not made up"); p.Took(1700);
            Assert.IsFalse(p.Due(1900));
            Assert.IsTrue(p.Extra(1900), "an extra within the allowance");
            Assert.IsFalse(p.Extra(1950), "one at a time");
            Assert.IsTrue(p.Extra(2600), "a new slot");
        }
    }

    [TestFixture]
    public class ReplayTests
    {
        static Recording Sample()
        {
            var r = new Recording { Game = "g", Seed = 42, StepMs = 1000.0 / 60, Ticks = 90, Control = "agent" };
            r.Inputs.Add(new KeyValuePair<long, List<InputValue>>(1, new List<InputValue> { new InputValue { Name = "move", Kind = ActionKind.Axis2D, X = 1, Y = -0.25 } }));
            r.Inputs.Add(new KeyValuePair<long, List<InputValue>>(31, new List<InputValue> { new InputValue { Name = "fire", Kind = ActionKind.Button, Pressed = true }, new InputValue { Name = "pointer", Kind = ActionKind.Pointer, X = 3, Y = 4, Button = "left", Pressed = true } }));
            r.Steps.AddRange(new long[] { 0, 30, 90 });
            return r;
        }

        [Test]
        public void RecordingsRoundTrip()
        {
            var back = Recording.Decode(Sample().Encode());
            Assert.AreEqual(42, back.Seed);
            Assert.AreEqual(1000.0 / 60, back.StepMs);
            Assert.AreEqual(90, back.Ticks);
            Assert.AreEqual("agent", back.Control);
            Assert.AreEqual(2, back.Inputs.Count);
            Assert.IsTrue(back.Inputs[0].Value[0].SameAs(Sample().Inputs[0].Value[0]));
            Assert.IsTrue(back.Inputs[1].Value[1].SameAs(Sample().Inputs[1].Value[1]));
            CollectionAssert.AreEqual(new long[] { 0, 30, 90 }, back.Steps);
        }

        [TestCase("not json", "not JSON")]
        [TestCase("{\"format\":\"other/v9\"}", "this adapter reads cappy-csharp/v1")]
        [TestCase("{\"format\":\"cappy-csharp/v1\",\"seed\":1,\"stepMs\":20}", "ticks are required")]
        [TestCase("{\"format\":\"cappy-csharp/v1\",\"seed\":1,\"stepMs\":20,\"ticks\":5,\"inputs\":[[3,[]],[2,[]]]}", "go back")]
        [TestCase("{\"format\":\"cappy-csharp/v1\",\"seed\":1,\"stepMs\":20,\"ticks\":5,\"inputs\":[[1,[{\"x\":1}]]]}", "no name")]
        public void BadRecordingsAreRefused(string text, string why)
        {
            var e = Assert.Throws<CappyFailure>(() => Recording.Decode(System.Text.Encoding.UTF8.GetBytes(text)));
            Assert.AreEqual(Codes.ReplayInvalid, e.Code);
            StringAssert.Contains(why, e.Message);
        }

        [Test]
        public void InlinePayloadsCarryTheirSha256()
        {
            var data = Sample().Encode();
            var p = ReplayPayload.Make(data, Recording.Format, null);
            Assert.AreEqual("inline", p["kind"]);
            Assert.AreEqual(ReplayPayload.Sha256(data), p["sha256"]);
            Assert.AreEqual("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ReplayPayload.Sha256(new byte[0]));
            CollectionAssert.AreEqual(data, ReplayPayload.Read(Json.Parse(Json.Write(p))));
            p["sha256"] = ((string)p["sha256"]).ToUpperInvariant();
            Assert.DoesNotThrow(() => ReplayPayload.Read(p), "either case");
            p["data"] = Convert.ToBase64String(new byte[] { 1, 2, 3 });
            StringAssert.Contains("SHA-256", Assert.Throws<CappyFailure>(() => ReplayPayload.Read(p)).Message);
            p["data"] = "***";
            Assert.AreEqual(Codes.ReplayInvalid, Assert.Throws<CappyFailure>(() => ReplayPayload.Read(p)).Code);
        }

        [Test]
        public void LargeReplaysAreFiles()
        {
            string dir = Path.Combine(Path.GetTempPath(), "cappy-test-" + Guid.NewGuid().ToString("N"));
            try
            {
                var data = Sample().Encode();
                var p = ReplayPayload.Make(data, Recording.Format, dir, 16);
                Assert.AreEqual("file", p["kind"]);
                Assert.IsTrue(Path.IsPathRooted((string)p["path"]));
                Assert.AreEqual((long)data.Length, p["bytes"]);
                CollectionAssert.AreEqual(data, ReplayPayload.Read(p));
                File.AppendAllText((string)p["path"], "x");
                StringAssert.Contains("is not", Assert.Throws<CappyFailure>(() => ReplayPayload.Read(p)).Message);
                p["path"] = Path.Combine(dir, "gone.json");
                Assert.AreEqual(Codes.ReplayInvalid, Assert.Throws<CappyFailure>(() => ReplayPayload.Read(p)).Code);
                p["bytes"] = 2e9;
                StringAssert.Contains("more than", Assert.Throws<CappyFailure>(() => ReplayPayload.Read(p)).Message);
                p["kind"] = "s3";
                Assert.AreEqual(Codes.ReplayUnsupported, Assert.Throws<CappyFailure>(() => ReplayPayload.Read(p)).Code);
            }
            finally
            {
                if (Directory.Exists(dir)) Directory.Delete(dir, true);
            }
        }
    }
}
