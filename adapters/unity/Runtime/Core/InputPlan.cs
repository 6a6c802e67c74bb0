using System;
using System.Collections.Generic;

namespace Crosscode.Cappy
{
    /// <summary>An input action as the engine describes it (Unity: an InputAction of the Input System).</summary>
    public sealed class ActionSource
    {
        /// <summary>Its action map's name (Player, UI).</summary>
        public string Map;
        /// <summary>Its name in the map.</summary>
        public string Name;
        /// <summary>Button, Value or PassThrough.</summary>
        public string Type;
        /// <summary>The control type it expects: Button, Key, Axis, Vector2, Stick, Dpad (may be empty).</summary>
        public string ControlType;
        /// <summary>Its bindings, in order.</summary>
        public List<BindingSource> Bindings = new List<BindingSource>();
    }

    /// <summary>One binding of an action.</summary>
    public sealed class BindingSource
    {
        /// <summary>The control path (&lt;Keyboard&gt;/space), or a composite's type (2DVector, 1DAxis, Dpad).</summary>
        public string Path;
        /// <summary>Whether it is a composite (its parts follow it).</summary>
        public bool IsComposite;
        /// <summary>Whether it is a part of the composite before it.</summary>
        public bool IsPartOfComposite;
        /// <summary>A part's name: up, down, left, right, negative, positive.</summary>
        public string Part;

        /// <summary>A binding to a control.</summary>
        public static BindingSource To(string path) { return new BindingSource { Path = path }; }
        /// <summary>A composite of the given type.</summary>
        public static BindingSource Composite(string type) { return new BindingSource { Path = type, IsComposite = true }; }
        /// <summary>A part of a composite.</summary>
        public static BindingSource PartOf(string part, string path) { return new BindingSource { Path = path, Part = part, IsPartOfComposite = true }; }
    }

    /// <summary>A value to write into a control of one of the package's own devices.</summary>
    public sealed class ControlWrite
    {
        /// <summary>The device: Keyboard, Gamepad or Mouse (the package adds one of each).</summary>
        public string Device;
        /// <summary>The binding's path, which the engine resolves on that device.</summary>
        public string Path;
        /// <summary>A vector control (a stick, the mouse's position).</summary>
        public bool Vector;
        /// <summary>The value (a button: 1 or 0; a vector: X and Y).</summary>
        public double X, Y;

        /// <inheritdoc/>
        public override string ToString()
        {
            return Device + ":" + Path + "=" + (Vector ? "(" + Fmt.Num(X) + "," + Fmt.Num(Y) + ")" : Fmt.Num(X));
        }
    }

    /// <summary>
    /// How a project's input actions are offered to an agent and pressed:
    /// each action becomes a button, axis or axis2d, pressed through a
    /// control of the package's own keyboard, gamepad or mouse that the
    /// action is bound to, so the game reads it as a player's. A stick
    /// binding takes an axis2d's exact values; a composite of keys presses
    /// them (beyond half way). The mouse is the pointer. Engine-independent:
    /// the engine layer describes its actions (<see cref="ActionSource"/>),
    /// says which device has a control at a path, and writes what this
    /// plan says.
    /// </summary>
    public sealed class InputPlan
    {
        /// <summary>The pointer action's name.</summary>
        public const string PointerName = "pointer";

        sealed class Planned
        {
            public GameAction Action;
            public ActionSource Source;
            public ControlWrite Press;          // a button
            public ControlWrite Stick;          // an analog axis2d or axis
            public ControlWrite Up, Down, Left, Right, Negative, Positive; // keys of a composite
        }

        readonly List<Planned> planned = new List<Planned>();
        readonly Dictionary<string, Planned> byName = new Dictionary<string, Planned>();
        readonly List<GameAction> actions = new List<GameAction>();
        bool pointer;

        /// <summary>The actions an agent sees.</summary>
        public IList<GameAction> Actions { get { return actions; } }

        /// <summary>The source of an action offered, or null (the pointer, unknown names).</summary>
        public ActionSource SourceOf(string name)
        {
            Planned p;
            return byName.TryGetValue(name, out p) ? p.Source : null;
        }

        static readonly string[] PointerControls = { "/position", "/delta", "/scroll", "/radius", "/pressure", "/tilt", "/twist" };

        /// <summary>
        /// The plan for sources: resolve(path) names the package's device
        /// (Keyboard, Gamepad, Mouse) with a control at path, or null.
        /// withPointer adds the mouse as the action "pointer".
        /// </summary>
        public static InputPlan Build(IList<ActionSource> sources, Func<string, string> resolve, bool withPointer)
        {
            var plan = new InputPlan();
            var count = new Dictionary<string, int>();
            foreach (var s in sources) { int n; count.TryGetValue(s.Name, out n); count[s.Name] = n + 1; }
            foreach (var s in sources)
            {
                var p = Plan(s, resolve);
                if (p == null) continue;
                string name = count[s.Name] > 1 || s.Name == PointerName ? s.Map + "/" + s.Name : s.Name;
                if (plan.byName.ContainsKey(name) || Checks.Id(name, Wire.MaxActionNameBytes) != null) continue;
                p.Action.Name = name;
                plan.planned.Add(p);
                plan.byName[name] = p;
                plan.actions.Add(p.Action);
                if (plan.actions.Count >= Wire.MaxActions - 1) break;
            }
            if (withPointer && resolve("<Mouse>/position") == "Mouse")
            {
                plan.pointer = true;
                plan.actions.Add(new GameAction(PointerName, ActionKind.Pointer, "The mouse: x, y in the pixels of the game's pictures; button left (default), middle or right; pressed true holds it, false releases it."));
            }
            return plan;
        }

        static bool Usable(string path)
        {
            if (string.IsNullOrEmpty(path)) return false;
            foreach (var c in PointerControls)
                if (path.EndsWith(c, StringComparison.OrdinalIgnoreCase)) return false;
            return true;
        }

        static ControlWrite Write(string path, Func<string, string> resolve, bool vector)
        {
            if (!Usable(path)) return null;
            string device = resolve(path);
            return device == null ? null : new ControlWrite { Device = device, Path = path, Vector = vector };
        }

        static string Kind(ActionSource s)
        {
            string ct = (s.ControlType ?? "").ToLowerInvariant();
            if (ct == "vector2" || ct == "stick" || ct == "dpad") return ActionKind.Axis2D;
            if (ct == "axis" || ct == "analog") return ActionKind.Axis;
            if (ct == "button" || ct == "key" || ct == "digital" || ct == "integer") return ActionKind.Button;
            if (s.Type == "Button") return ActionKind.Button;
            // A value action that says nothing: what its bindings are.
            foreach (var b in s.Bindings)
            {
                string path = (b.Path ?? "").ToLowerInvariant();
                if (b.IsComposite) return path.Contains("2d") || path.Contains("dpad") ? ActionKind.Axis2D : ActionKind.Axis;
                if (path.EndsWith("stick") || path.EndsWith("/dpad")) return ActionKind.Axis2D;
            }
            return ActionKind.Button;
        }

        static Planned Plan(ActionSource s, Func<string, string> resolve)
        {
            string kind = Kind(s);
            var p = new Planned { Source = s };
            var keys = new List<string>();
            for (int i = 0; i < s.Bindings.Count; i++)
            {
                var b = s.Bindings[i];
                if (b.IsComposite)
                {
                    // Its parts follow it.
                    var parts = new Dictionary<string, ControlWrite>();
                    int j = i + 1;
                    for (; j < s.Bindings.Count && s.Bindings[j].IsPartOfComposite; j++)
                    {
                        var part = (s.Bindings[j].Part ?? "").ToLowerInvariant();
                        if (parts.ContainsKey(part)) continue;
                        var w = Write(s.Bindings[j].Path, resolve, false);
                        if (w != null) parts[part] = w;
                    }
                    i = j - 1;
                    if (kind == ActionKind.Axis2D && p.Stick == null && p.Up == null && parts.Count > 0)
                    {
                        parts.TryGetValue("up", out p.Up);
                        parts.TryGetValue("down", out p.Down);
                        parts.TryGetValue("left", out p.Left);
                        parts.TryGetValue("right", out p.Right);
                        foreach (var w in parts.Values) keys.Add(w.Path);
                    }
                    else if (kind == ActionKind.Axis && p.Stick == null && p.Negative == null && parts.Count > 0)
                    {
                        parts.TryGetValue("negative", out p.Negative);
                        parts.TryGetValue("positive", out p.Positive);
                        foreach (var w in parts.Values) keys.Add(w.Path);
                    }
                    continue;
                }
                if (b.IsPartOfComposite) continue;
                if (kind == ActionKind.Button && p.Press == null)
                {
                    p.Press = Write(b.Path, resolve, false);
                    if (p.Press != null) keys.Add(b.Path);
                }
                else if (kind == ActionKind.Axis2D && p.Stick == null)
                {
                    string lower = (b.Path ?? "").ToLowerInvariant();
                    if (lower.EndsWith("stick") || lower.EndsWith("/dpad"))
                    {
                        p.Stick = Write(b.Path, resolve, true);
                        if (p.Stick != null) keys.Insert(0, b.Path);
                    }
                }
                else if (kind == ActionKind.Axis && p.Stick == null)
                {
                    p.Stick = Write(b.Path, resolve, false);
                    if (p.Stick != null) keys.Insert(0, b.Path);
                }
            }
            string how;
            switch (kind)
            {
                case ActionKind.Button:
                    if (p.Press == null) return null;
                    how = "a button (pressed true or false; held until a later step releases it)";
                    break;
                case ActionKind.Axis2D:
                    if (p.Stick == null && p.Up == null && p.Down == null && p.Left == null && p.Right == null) return null;
                    how = "x to the right, y up, each -1 to 1, as the action reads them" + (p.Stick == null ? " (pressed as keys: beyond 0.5 presses one)" : "");
                    break;
                default:
                    if (p.Stick == null && p.Negative == null && p.Positive == null) return null;
                    how = "a value from -1 to 1" + (p.Stick == null ? " (pressed as keys: beyond 0.5 presses one)" : "");
                    break;
            }
            string map = string.IsNullOrEmpty(s.Map) ? "" : s.Map + "/";
            p.Action = new GameAction(s.Name, kind, Checks.Cap("The game's action " + map + s.Name + ": " + how + "; bound to " + string.Join(", ", keys.ToArray()) + ".", Wire.MaxActionDescBytes));
            return p;
        }

        /// <summary>What to write for one input (its action's controls); empty for unknown names.</summary>
        public List<ControlWrite> Writes(InputValue v)
        {
            var outp = new List<ControlWrite>();
            if (v.Kind == ActionKind.Pointer && pointer && v.Name == PointerName)
            {
                outp.Add(new ControlWrite { Device = "Mouse", Path = "<Mouse>/position", Vector = true, X = v.X, Y = v.Y });
                if (v.Pressed.HasValue)
                    outp.Add(new ControlWrite { Device = "Mouse", Path = "<Mouse>/" + (v.Button ?? "left") + "Button", X = v.Pressed.Value ? 1 : 0 });
                return outp;
            }
            Planned p;
            if (!byName.TryGetValue(v.Name, out p)) return outp;
            switch (p.Action.Kind)
            {
                case ActionKind.Button:
                    outp.Add(With(p.Press, v.Pressed == true ? 1 : 0, 0));
                    break;
                case ActionKind.Axis2D:
                    if (p.Stick != null) { outp.Add(With(p.Stick, v.X, v.Y)); break; }
                    Key(outp, p.Right, v.X > 0.5);
                    Key(outp, p.Left, v.X < -0.5);
                    Key(outp, p.Up, v.Y > 0.5);
                    Key(outp, p.Down, v.Y < -0.5);
                    break;
                case ActionKind.Axis:
                    if (p.Stick != null) { outp.Add(With(p.Stick, v.Value, 0)); break; }
                    Key(outp, p.Positive, v.Value > 0.5);
                    Key(outp, p.Negative, v.Value < -0.5);
                    break;
            }
            return outp;
        }

        /// <summary>What puts every control of the plan at rest.</summary>
        public List<ControlWrite> Rest()
        {
            var outp = new List<ControlWrite>();
            foreach (var p in planned)
                foreach (var w in new[] { p.Press, p.Stick, p.Up, p.Down, p.Left, p.Right, p.Negative, p.Positive })
                    if (w != null) outp.Add(With(w, 0, 0));
            if (pointer)
                foreach (var b in new[] { "left", "middle", "right" })
                    outp.Add(new ControlWrite { Device = "Mouse", Path = "<Mouse>/" + b + "Button", X = 0 });
            return outp;
        }

        static void Key(List<ControlWrite> outp, ControlWrite w, bool down)
        {
            if (w != null) outp.Add(With(w, down ? 1 : 0, 0));
        }

        static ControlWrite With(ControlWrite w, double x, double y)
        {
            return new ControlWrite { Device = w.Device, Path = w.Path, Vector = w.Vector, X = x, Y = y };
        }
    }
}
