using System;
using System.Collections.Generic;
using System.Reflection;

namespace Crosscode.Cappy
{
    /// <summary>
    /// The capture config's events (welcome.events, capability
    /// config_events): <c>"Player/Health:onDied": "PLAYER_DIED"</c> names
    /// an object's component (<c>Player</c>'s <c>Health</c>) and one of its
    /// C# events or UnityEvent fields (<c>onDied</c>); each time it fires
    /// during an operation the core sends the event, with its arguments as
    /// the payload's <c>args</c>. A path whose last part is an object, not a
    /// component (<c>Player:onDied</c>), looks for the member on each of the
    /// object's components. Found by reflection, with no UnityEngine type:
    /// an event or a field with an AddListener(delegate) method, whose
    /// delegate takes up to four arguments.
    /// </summary>
    public sealed class ConfigEvents
    {
        /// <summary>The most problems an operation's summary lists.</summary>
        public const int MaxProblems = 10;

        readonly Dictionary<string, string> map = new Dictionary<string, string>();
        readonly List<string> problems = new List<string>();
        // What is connected already: (target object, member name).
        readonly HashSet<Hooked> hooked = new HashSet<Hooked>();

        /// <summary>Called with the event's name and the arguments when one fires.</summary>
        public Action<string, object[]> Fire;

        /// <summary>The keys that could not be connected at the last Resolve, each with why.</summary>
        public IList<string> Problems { get { return problems; } }

        /// <summary>Whether there is anything to connect.</summary>
        public bool Any { get { return map.Count > 0; } }

        /// <summary>Sets the map from welcome.events (null: none).</summary>
        public void Set(object events)
        {
            map.Clear();
            problems.Clear();
            if (events == null) return;
            var o = events as JsonObject;
            if (o == null) { problems.Add("events must be an object of \"PATH:member\": \"EVENT_NAME\""); return; }
            foreach (var kv in o)
            {
                var name = kv.Value as string;
                int cut = kv.Key.LastIndexOf(':');
                if (cut <= 0 || cut == kv.Key.Length - 1 || string.IsNullOrEmpty(name))
                {
                    problems.Add("events: \"" + kv.Key + "\" is not \"PATH/Component:member\": \"EVENT_NAME\"");
                    continue;
                }
                map[kv.Key] = name;
            }
        }

        /// <summary>Connects what the scene has now (again at each operation's start: scenes change).</summary>
        public void Resolve(ISceneGraph scene)
        {
            if (map.Count == 0 || scene == null) return;
            problems.Clear();
            foreach (var kv in map)
            {
                int cut = kv.Key.LastIndexOf(':');
                string path = kv.Key.Substring(0, cut), member = kv.Key.Substring(cut + 1);
                string why = Connect(scene, path, member, kv.Value);
                if (why != null && problems.Count < MaxProblems) problems.Add("events: " + kv.Key + " (" + kv.Value + "): " + why);
            }
        }

        string Connect(ISceneGraph scene, string path, string member, string eventName)
        {
            // Player/Health:onDied: the object Player, its component Health.
            int slash = path.LastIndexOf('/');
            if (slash > 0)
            {
                var owner = Inspect.Find(scene, path.Substring(0, slash));
                string comp = path.Substring(slash + 1);
                if (owner != null)
                    foreach (var c in owner.Components())
                        if (c != null && owner.ComponentName(c) == comp)
                            return Hook(c, member, eventName);
            }
            // Player:onDied: a member of one of Player's components.
            var node = Inspect.Find(scene, path);
            if (node == null)
                return "no object " + path + (slash > 0 ? " and no component " + path.Substring(slash + 1) + " on " + path.Substring(0, slash) : "");
            foreach (var c in node.Components())
                if (c != null && HasMember(c.GetType(), member)) return Hook(c, member, eventName);
            var names = new List<string>();
            foreach (var c in node.Components()) if (c != null) names.Add(node.ComponentName(c));
            return "no component of " + path + " has an event or UnityEvent " + member + " (its components: " + string.Join(", ", names.ToArray()) + ")";
        }

        const BindingFlags Members = BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Instance;

        static bool HasMember(Type t, string member)
        {
            return t.GetEvent(member, Members) != null || t.GetField(member, Members) != null;
        }

        string Hook(object target, string member, string eventName)
        {
            var key = new Hooked(target, member);
            if (hooked.Contains(key)) return null;
            var t = target.GetType();
            var ev = t.GetEvent(member, Members);
            try
            {
                if (ev != null)
                {
                    var d = Listener(ev.EventHandlerType, eventName);
                    if (d == null) return member + "'s delegate takes more than four arguments";
                    var add = ev.GetAddMethod(true);
                    add.Invoke(target, new object[] { d });
                    hooked.Add(key);
                    return null;
                }
                var f = t.GetField(member, Members);
                if (f == null) return t.Name + " has no event or field " + member;
                object holder = f.GetValue(target);
                if (holder == null) return t.Name + "." + member + " is null";
                var adder = AddListener(holder.GetType());
                if (adder == null) return t.Name + "." + member + " (" + holder.GetType().Name + ") is not an event or a UnityEvent (no AddListener)";
                var del = Listener(adder.GetParameters()[0].ParameterType, eventName);
                if (del == null) return member + "'s listener takes more than four arguments";
                adder.Invoke(holder, new object[] { del });
                hooked.Add(key);
                return null;
            }
            catch (Exception e)
            {
                var inner = e is TargetInvocationException && e.InnerException != null ? e.InnerException : e;
                return "could not connect: " + inner.Message;
            }
        }

        static MethodInfo AddListener(Type t)
        {
            foreach (var m in t.GetMethods(BindingFlags.Public | BindingFlags.Instance))
            {
                if (m.Name != "AddListener") continue;
                var ps = m.GetParameters();
                if (ps.Length == 1 && typeof(Delegate).IsAssignableFrom(ps[0].ParameterType)) return m;
            }
            return null;
        }

        // A delegate of type dt that fires eventName with its arguments.
        Delegate Listener(Type dt, string eventName)
        {
            var invoke = dt.GetMethod("Invoke");
            if (invoke == null || invoke.ReturnType != typeof(void)) return null;
            var ps = invoke.GetParameters();
            Type hook;
            switch (ps.Length)
            {
                case 0: hook = typeof(Hook0); break;
                case 1: hook = typeof(Hook1<>).MakeGenericType(ps[0].ParameterType); break;
                case 2: hook = typeof(Hook2<,>).MakeGenericType(ps[0].ParameterType, ps[1].ParameterType); break;
                case 3: hook = typeof(Hook3<,,>).MakeGenericType(ps[0].ParameterType, ps[1].ParameterType, ps[2].ParameterType); break;
                case 4: hook = typeof(Hook4<,,,>).MakeGenericType(ps[0].ParameterType, ps[1].ParameterType, ps[2].ParameterType, ps[3].ParameterType); break;
                default: return null;
            }
            var h = (HookBase)Activator.CreateInstance(hook);
            h.Owner = this;
            h.EventName = eventName;
            return Delegate.CreateDelegate(dt, h, hook.GetMethod("Invoke"));
        }

        internal void Raise(string eventName, object[] args)
        {
            var f = Fire;
            if (f != null) f(eventName, args);
        }

        struct Hooked : IEquatable<Hooked>
        {
            readonly object target;
            readonly string member;
            public Hooked(object target, string member) { this.target = target; this.member = member; }
            public bool Equals(Hooked o) { return ReferenceEquals(target, o.target) && member == o.member; }
            public override bool Equals(object o) { return o is Hooked && Equals((Hooked)o); }
            public override int GetHashCode() { return System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode(target) ^ member.GetHashCode(); }
        }
    }

    /// <summary>What the listeners of <see cref="ConfigEvents"/> share.</summary>
    public abstract class HookBase
    {
        internal ConfigEvents Owner;
        internal string EventName;
        /// <summary>Sends the event.</summary>
        protected void Raise(params object[] args) { Owner.Raise(EventName, args); }
    }

    /// <summary>A listener without arguments.</summary>
    public sealed class Hook0 : HookBase { public void Invoke() { Raise(); } }
    /// <summary>A listener of one argument.</summary>
    public sealed class Hook1<A> : HookBase { public void Invoke(A a) { Raise(a); } }
    /// <summary>A listener of two arguments.</summary>
    public sealed class Hook2<A, B> : HookBase { public void Invoke(A a, B b) { Raise(a, b); } }
    /// <summary>A listener of three arguments.</summary>
    public sealed class Hook3<A, B, C> : HookBase { public void Invoke(A a, B b, C c) { Raise(a, b, c); } }
    /// <summary>A listener of four arguments.</summary>
    public sealed class Hook4<A, B, C, D> : HookBase { public void Invoke(A a, B b, C c, D d) { Raise(a, b, c, d); } }
}
