using System;
using System.Collections.Generic;
using System.Linq;
using NUnit.Framework;

namespace Crosscode.Cappy.Tests
{
    // A scene as an engine layer shows it to the core.
    sealed class Node : ISceneNode
    {
        public readonly List<Node> Kids = new List<Node>();
        public readonly List<object> Parts = new List<object>();
        public Node(string name, params object[] parts) { Name = name; Parts.AddRange(parts); }
        public string Name { get; set; }
        public IList<ISceneNode> Children() { return Kids.Cast<ISceneNode>().ToList(); }
        public IDictionary<string, object> Describe() { return new Dictionary<string, object> { { "active", true }, { "position", new Vec { x = 1, y = 2, z = 3 } } }; }
        public IList<object> Components() { return Parts; }
        public string ComponentName(object c) { return c.GetType().Name; }
    }

    sealed class Scene : ISceneGraph, IValueConverter
    {
        public readonly List<Node> Top = new List<Node>();
        public IList<ISceneNode> Roots() { return Top.Cast<ISceneNode>().ToList(); }
        public string SceneName { get { return "Main"; } }
        public int Generation { get { return 0; } }
        // The engine's own objects are written by name.
        public object Convert(object v) { var n = v as Node; return n != null ? (object)("(Node " + n.Name + ")") : v; }
    }

    public struct Vec { public float x, y, z; }
    public enum Mood { Calm, Angry }

    public sealed class Health
    {
        public int hp = 30, max = 50;
        public Mood mood = Mood.Angry;
        public List<string> tags = new List<string> { "boss" };
        public Vec spawn = new Vec { x = 0.5f };
        public Health self;
        public object target;
        int secret = 7;
        public int Secret() { return secret; }
        public event Action<int, string> Hurt;
        public event Action Died;
        public UnityishEvent onHeal = new UnityishEvent();
        public void Hit(int d) { hp -= d; if (Hurt != null) Hurt(d, "sword"); if (hp <= 0 && Died != null) Died(); }
    }

    // Shaped like UnityEngine.Events.UnityEvent<T0>.
    public sealed class UnityishEvent
    {
        readonly List<UnityishAction<float>> ls = new List<UnityishAction<float>>();
        public void AddListener(UnityishAction<float> a) { ls.Add(a); }
        public void Invoke(float v) { foreach (var l in ls) l(v); }
    }

    public delegate void UnityishAction<T0>(T0 arg0);

    [TestFixture]
    public class SceneTests
    {
        Scene scene;
        Health health;

        [SetUp]
        public void Build()
        {
            scene = new Scene();
            health = new Health();
            var boss = new Node("Boss", health);
            var weapon = new Node("Weapon", new Health { hp = 1 });
            boss.Kids.Add(weapon);
            health.self = health;
            health.target = weapon;
            scene.Top.Add(new Node("Camera"));
            scene.Top.Add(boss);
        }

        static JsonObject Ask(Scene s, string q)
        {
            return (JsonObject)Json.Parse(Inspect.Answer(s, q, s.Convert));
        }

        [Test]
        public void TheEmptyQueryListsTheRoots()
        {
            var o = Ask(scene, "");
            Assert.AreEqual("Main", o["scene"]);
            var roots = ((List<object>)o["roots"]).Cast<JsonObject>().ToList();
            CollectionAssert.AreEqual(new[] { "Camera", "Boss" }, roots.Select(r => (string)r["name"]).ToArray());
            Assert.AreEqual(1.0, roots[1]["children"]);
            StringAssert.Contains("Player/Weapon", (string)o["syntax"]);
        }

        [Test]
        public void AnObjectAnswersItsTransformChildrenAndComponentsPublicFields()
        {
            var o = Ask(scene, "Boss");
            Assert.AreEqual("Boss", o["path"]);
            Assert.AreEqual(2.0, ((JsonObject)o["position"])["y"]);
            CollectionAssert.AreEqual(new object[] { "Weapon" }, (List<object>)o["children"]);
            var h = (JsonObject)((JsonObject)o["components"])["Health"];
            Assert.AreEqual(30.0, h["hp"]);
            Assert.AreEqual("Angry", h["mood"]);
            Assert.AreEqual(0.5, ((JsonObject)h["spawn"])["x"]);
            Assert.AreEqual("(Node Weapon)", h["target"], "an engine object by its name");
            StringAssert.Contains("already written", (string)h["self"], "a cycle once");
            Assert.IsFalse(h.ContainsKey("secret"), "public fields only");
            Assert.AreEqual(1.0, ((JsonObject)((JsonObject)Ask(scene, "Boss/Weapon")["components"])["Health"])["hp"]);
        }

        [Test]
        public void PathsIntoComponentsAndValues()
        {
            Assert.AreEqual("30", Inspect.Answer(scene, "Boss:Health.hp", scene.Convert));
            Assert.AreEqual("\"boss\"", Inspect.Answer(scene, "Boss:Health.tags.0", scene.Convert));
            Assert.AreEqual("3", Inspect.Answer(scene, "Boss:position.z", scene.Convert));
            Assert.AreEqual(50.0, Ask(scene, "Boss:Health")["max"]);
        }

        [TestCase("Dragon", "UNKNOWN_QUERY", "the scene's root objects are Camera, Boss")]
        [TestCase("Boss/Shield", "UNKNOWN_QUERY", "Boss's children are Weapon")]
        [TestCase("Boss:Armor", "UNKNOWN_QUERY", "it has Health, active, position")]
        [TestCase("Boss:Health.mana", "UNKNOWN_QUERY", "it has hp, max, mood")]
        [TestCase("Boss:Health.tags.5", "UNKNOWN_QUERY", "1 items")]
        [TestCase("Boss:Health.tags.x", "INVALID_QUERY", "an index")]
        [TestCase("Boss:", "INVALID_QUERY", "nothing after")]
        public void UnknownQueriesSayWhatThereIs(string q, string code, string why)
        {
            var e = Assert.Throws<CappyFailure>(() => Inspect.Answer(scene, q, scene.Convert));
            Assert.AreEqual(code, e.Code);
            StringAssert.Contains(why, e.Message);
        }

        [Test]
        public void LargeAnswersAreRefusedAndDeepOnesCut()
        {
            var big = new Node("Big", new Dictionary<string, object> { { "blob", new string('x', 4000) } });
            for (int i = 0; i < 200; i++) big.Parts.Add(new Holder { items = Enumerable.Range(0, 300).Select(n => "item" + n).ToList() });
            scene.Top.Add(big);
            Assert.AreEqual(Codes.ValueTooLarge, Assert.Throws<CappyFailure>(() => Inspect.Answer(scene, "Big", scene.Convert)).Code);
            var one = Inspect.Answer(scene, "Big:Holder.items", scene.Convert);
            StringAssert.Contains("(more items)", one, "lists are cut at 256");
            var deep = new Chain();
            var c = deep;
            for (int i = 0; i < 10; i++) { c.next = new Chain(); c = c.next; }
            scene.Top.Add(new Node("Deep", deep));
            StringAssert.Contains("deeper than 6", Inspect.Answer(scene, "Deep", scene.Convert));
        }

        public sealed class Holder { public List<string> items; }
        public sealed class Chain { public Chain next; }

        [Test]
        public void TheConfigsEventsConnectCSharpEventsAndUnityEvents()
        {
            var ev = new ConfigEvents();
            var fired = new List<string>();
            ev.Fire = (name, args) => fired.Add(name + Json.Write(args));
            ev.Set(Json.Parse("{\"Boss/Health:Hurt\":\"HURT\",\"Boss/Health:Died\":\"DIED\",\"Boss:onHeal\":\"HEAL\",\"Boss/Health:Nope\":\"X\",\"Ghost/Health:Died\":\"Y\",\"bad\":\"Z\"}"));
            ev.Resolve(scene);
            ev.Resolve(scene); // again (an operation's start): connected once
            health.Hit(10);
            health.Hit(25);
            health.onHeal.Invoke(2.5f);
            CollectionAssert.AreEqual(new[] { "HURT[10,\"sword\"]", "HURT[25,\"sword\"]", "DIED[]", "HEAL[2.5]" }, fired);
            var problems = string.Join("\n", ev.Problems.ToArray());
            StringAssert.Contains("Nope", problems);
            StringAssert.Contains("no object Ghost", problems);
            Assert.AreEqual(2, ev.Problems.Count, problems);
        }
    }

    [TestFixture]
    public class InputPlanTests
    {
        // Which of the package's devices has a control at a path: keyboard
        // keys, the gamepad's, the mouse's.
        static string Resolve(string path)
        {
            if (path.StartsWith("<Keyboard>/")) return "Keyboard";
            if (path.StartsWith("<Gamepad>/")) return "Gamepad";
            if (path.StartsWith("<Mouse>/")) return "Mouse";
            return null; // <XRController>, <Joystick>...
        }

        static ActionSource Act(string map, string name, string type, string controlType, params BindingSource[] b)
        {
            var a = new ActionSource { Map = map, Name = name, Type = type, ControlType = controlType };
            a.Bindings.AddRange(b);
            return a;
        }

        // Unity's default project-wide actions, in part.
        static List<ActionSource> Defaults()
        {
            return new List<ActionSource>
            {
                Act("Player", "Move", "Value", "Vector2", BindingSource.To("<Gamepad>/leftStick"), BindingSource.Composite("2DVector"),
                    BindingSource.PartOf("up", "<Keyboard>/w"), BindingSource.PartOf("down", "<Keyboard>/s"), BindingSource.PartOf("left", "<Keyboard>/a"), BindingSource.PartOf("right", "<Keyboard>/d")),
                Act("Player", "Look", "Value", "Vector2", BindingSource.To("<Mouse>/delta"), BindingSource.To("<XRController>/thumbstick")),
                Act("Player", "Attack", "Button", "Button", BindingSource.To("<XRController>/trigger"), BindingSource.To("<Mouse>/leftButton"), BindingSource.To("<Gamepad>/buttonWest")),
                Act("Player", "Jump", "Button", "", BindingSource.To("<Keyboard>/space"), BindingSource.To("<Gamepad>/buttonSouth")),
                Act("Player", "Steer", "Value", "Axis", BindingSource.Composite("1DAxis"), BindingSource.PartOf("negative", "<Keyboard>/leftArrow"), BindingSource.PartOf("positive", "<Keyboard>/rightArrow")),
                Act("UI", "Submit", "Button", "Button", BindingSource.To("<Keyboard>/enter")),
                Act("UI", "Point", "PassThrough", "Vector2", BindingSource.To("<Mouse>/position")),
                Act("UI", "Jump", "Button", "Button", BindingSource.To("<Keyboard>/j")),
            };
        }

        [Test]
        public void ActionsBecomeButtonsAndAxesThePackagesDevicesPress()
        {
            var plan = InputPlan.Build(Defaults(), Resolve, true);
            var got = plan.Actions.Select(a => a.Name + ":" + a.Kind).ToArray();
            CollectionAssert.AreEqual(new[] { "Move:axis2d", "Attack:button", "Player/Jump:button", "Steer:axis", "Submit:button", "UI/Jump:button", "pointer:pointer" }, got,
                "Look (mouse delta, an XR stick) and Point (the mouse position) have nothing to press; the pointer is the mouse; a name in two maps is qualified");
            StringAssert.Contains("<Gamepad>/leftStick", plan.Actions[0].Description);
            Assert.IsNotNull(plan.SourceOf("Player/Jump"));
        }

        [Test]
        public void WritesForEachKind()
        {
            var plan = InputPlan.Build(Defaults(), Resolve, true);
            Func<InputValue, string> w = v => string.Join(" ", plan.Writes(v).Select(x => x.ToString()).ToArray());
            Assert.AreEqual("Gamepad:<Gamepad>/leftStick=(0.5,-1)", w(new InputValue { Name = "Move", Kind = ActionKind.Axis2D, X = 0.5, Y = -1 }), "a stick takes the exact values");
            Assert.AreEqual("Mouse:<Mouse>/leftButton=1", w(new InputValue { Name = "Attack", Kind = ActionKind.Button, Pressed = true }));
            Assert.AreEqual("Keyboard:<Keyboard>/space=0", w(new InputValue { Name = "Player/Jump", Kind = ActionKind.Button, Pressed = false }));
            Assert.AreEqual("Keyboard:<Keyboard>/rightArrow=1 Keyboard:<Keyboard>/leftArrow=0", w(new InputValue { Name = "Steer", Kind = ActionKind.Axis, Value = 0.8 }), "keys beyond half way");
            Assert.AreEqual("Mouse:<Mouse>/position=(100,50) Mouse:<Mouse>/rightButton=1", w(new InputValue { Name = "pointer", Kind = ActionKind.Pointer, X = 100, Y = 50, Button = "right", Pressed = true }));
            Assert.AreEqual("", w(new InputValue { Name = "Nope", Kind = ActionKind.Button, Pressed = true }));
            var rest = plan.Rest();
            Assert.IsTrue(rest.All(x => x.X == 0 && x.Y == 0));
            Assert.IsTrue(rest.Any(x => x.Path == "<Keyboard>/enter"));
        }

        [Test]
        public void AMoveBoundToKeysOnlyPressesThem()
        {
            var keys = new List<ActionSource> { Defaults()[0] };
            keys[0].Bindings.RemoveAt(0); // no stick
            var plan = InputPlan.Build(keys, Resolve, false);
            StringAssert.Contains("pressed as keys", plan.Actions[0].Description);
            var ws = plan.Writes(new InputValue { Name = "Move", Kind = ActionKind.Axis2D, X = -0.9, Y = 0.7 }).Select(x => x.ToString()).ToArray();
            CollectionAssert.AreEquivalent(new[] { "Keyboard:<Keyboard>/d=0", "Keyboard:<Keyboard>/a=1", "Keyboard:<Keyboard>/w=1", "Keyboard:<Keyboard>/s=0" }, ws);
            Assert.IsFalse(plan.Actions.Any(a => a.Kind == ActionKind.Pointer), "no pointer unless asked");
        }

        [Test]
        public void AValueActionThatSaysNothingIsReadFromItsBindings()
        {
            var plan = InputPlan.Build(new List<ActionSource> { Act("P", "Aim", "Value", null, BindingSource.To("<Gamepad>/rightStick")) }, Resolve, false);
            Assert.AreEqual(ActionKind.Axis2D, plan.Actions[0].Kind);
        }
    }
}
