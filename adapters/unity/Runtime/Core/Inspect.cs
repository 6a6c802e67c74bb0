using System;
using System.Collections;
using System.Collections.Generic;
using System.Reflection;
using System.Text;

namespace Crosscode.Cappy
{
    /// <summary>
    /// Inspect: answers an agent's questions about the scene. The query is
    /// a path of object names from a root (<c>Player</c>,
    /// <c>Player/Weapon</c>), optionally followed by <c>:</c> and a
    /// component's type name or one of the object's own keys, then fields
    /// with <c>.</c> (<c>Player:Health.hp</c>, <c>Player:position.x</c>,
    /// list items by index). The empty query lists the root objects.
    /// Values are the components' public fields, bounded in depth and
    /// length; an answer over 256 KiB is VALUE_TOO_LARGE.
    /// </summary>
    public static class Inspect
    {
        /// <summary>How the empty query explains the language.</summary>
        public const string Syntax = "an object's path from a root (Player, Player/Weapon) answers its transform, children and components' public fields; add :Component or :key, then .field (Player:Health.hp, Player:position.x)";

        /// <summary>Answers query as JSON text, or throws a CappyFailure with UNKNOWN_QUERY, INVALID_QUERY or VALUE_TOO_LARGE.</summary>
        public static string Answer(ISceneGraph scene, string query, Func<object, object> convert)
        {
            if (query == null) throw new CappyFailure(Codes.InvalidQuery, "query must be a string");
            if (Checks.Bytes(query) > Wire.MaxInspectQuery) throw new CappyFailure(Codes.InvalidQuery, "the query is over 4096 bytes");
            object value;
            if (query.Trim().Length == 0) value = Overview(scene);
            else value = Resolve(scene, query.Trim(), convert);
            var w = new ValueWriter(convert);
            string text = w.Write(value);
            if (Checks.Bytes(text) > Wire.MaxInspectBytes)
                throw new CappyFailure(Codes.ValueTooLarge, "the answer is " + Checks.Bytes(text) + " bytes of JSON, over the 262144 an answer may have; ask for a part of it (:Component.field)");
            return text;
        }

        static object Overview(ISceneGraph scene)
        {
            var o = new JsonObject();
            o["scene"] = scene.SceneName;
            var roots = new List<object>();
            foreach (var n in scene.Roots())
            {
                var r = new JsonObject();
                r["name"] = n.Name;
                r["children"] = n.Children().Count;
                var comps = new List<object>();
                foreach (var c in n.Components()) comps.Add(n.ComponentName(c));
                r["components"] = comps;
                roots.Add(r);
            }
            o["roots"] = roots;
            o["syntax"] = Syntax;
            return o;
        }

        /// <summary>The object at a path of names from a root, or null.</summary>
        public static ISceneNode Find(ISceneGraph scene, string path)
        {
            var parts = path.Split('/');
            IList<ISceneNode> level = scene.Roots();
            ISceneNode node = null;
            foreach (var p in parts)
            {
                node = null;
                foreach (var n in level)
                    if (n.Name == p) { node = n; break; }
                if (node == null) return null;
                level = node.Children();
            }
            return node;
        }

        static object Resolve(ISceneGraph scene, string query, Func<object, object> convert)
        {
            int colon = query.IndexOf(':');
            string path = colon < 0 ? query : query.Substring(0, colon);
            var node = Find(scene, path);
            if (node == null) throw Unknown(scene, path);
            if (colon < 0) return Describe(node, path);
            var fields = query.Substring(colon + 1).Split('.');
            if (fields[0].Length == 0) throw new CappyFailure(Codes.InvalidQuery, "nothing after ':' in \"" + query + "\"");
            object v;
            var own = node.Describe();
            var comps = Named(node);
            if (comps.TryGetValue(fields[0], out v)) v = new Fields(v);
            else if (own == null || !own.TryGetValue(fields[0], out v))
            {
                var names = new List<string>(comps.Keys);
                if (own != null) names.AddRange(own.Keys);
                throw new CappyFailure(Codes.UnknownQuery, path + " has no component or key \"" + fields[0] + "\"; it has " + string.Join(", ", names.ToArray()));
            }
            string at = path + ":" + fields[0];
            for (int i = 1; i < fields.Length; i++)
            {
                v = Member(v, fields[i], at, convert);
                at += "." + fields[i];
            }
            return v;
        }

        static CappyFailure Unknown(ISceneGraph scene, string path)
        {
            int slash = path.LastIndexOf('/');
            var names = new List<string>();
            if (slash < 0)
                foreach (var r in scene.Roots()) names.Add(r.Name);
            else
            {
                var parent = Find(scene, path.Substring(0, slash));
                if (parent == null) return Unknown(scene, path.Substring(0, slash));
                foreach (var c in parent.Children()) names.Add(c.Name);
            }
            string where = slash < 0 ? "the scene's root objects are " : path.Substring(0, slash) + "'s children are ";
            return new CappyFailure(Codes.UnknownQuery, "no object \"" + path + "\"; " + where + (names.Count == 0 ? "none" : string.Join(", ", names.ToArray())));
        }

        // Components by type name; a second of one type is Name#2.
        static Dictionary<string, object> Named(ISceneNode node)
        {
            var d = new Dictionary<string, object>();
            foreach (var c in node.Components())
            {
                if (c == null) continue;
                string name = node.ComponentName(c), key = name;
                for (int i = 2; d.ContainsKey(key); i++) key = name + "#" + i;
                d[key] = c;
            }
            return d;
        }

        static object Describe(ISceneNode node, string path)
        {
            var o = new JsonObject();
            o["name"] = node.Name;
            o["path"] = path;
            var own = node.Describe();
            if (own != null)
                foreach (var kv in own) o[kv.Key] = kv.Value;
            var kids = new List<object>();
            foreach (var c in node.Children()) kids.Add(c.Name);
            o["children"] = kids;
            var comps = new JsonObject();
            foreach (var kv in Named(node)) comps[kv.Key] = new Fields(kv.Value);
            o["components"] = comps;
            return o;
        }

        // A field, key or index of v.
        static object Member(object v, string name, string at, Func<object, object> convert)
        {
            if (v == null) throw new CappyFailure(Codes.UnknownQuery, at + " is null");
            var fields = v as Fields;
            if (fields != null) v = fields.Target;
            if (convert != null)
            {
                object c = convert(v);
                if (!ReferenceEquals(c, v) && !(c is string)) v = c;
            }
            var jo = v as JsonObject;
            if (jo != null)
            {
                object x;
                if (jo.TryGetValue(name, out x)) return x;
                throw new CappyFailure(Codes.UnknownQuery, at + " has no key \"" + name + "\"; it has " + string.Join(", ", new List<string>(jo.Keys).ToArray()));
            }
            var dict = v as IDictionary;
            if (dict != null)
            {
                if (dict.Contains(name)) return dict[name];
                var keys = new List<string>();
                foreach (var k in dict.Keys) keys.Add(Convert.ToString(k));
                throw new CappyFailure(Codes.UnknownQuery, at + " has no key \"" + name + "\"; it has " + string.Join(", ", keys.ToArray()));
            }
            var list = v as IList;
            if (list != null)
            {
                int i;
                if (!int.TryParse(name, out i)) throw new CappyFailure(Codes.InvalidQuery, at + " is a list: name an index (0 to " + (list.Count - 1) + ")");
                if (i < 0 || i >= list.Count) throw new CappyFailure(Codes.UnknownQuery, at + " has " + list.Count + " items, no " + i);
                return list[i];
            }
            var f = v.GetType().GetField(name, BindingFlags.Public | BindingFlags.Instance);
            if (f == null)
            {
                var names = new List<string>();
                foreach (var x in v.GetType().GetFields(BindingFlags.Public | BindingFlags.Instance)) names.Add(x.Name);
                throw new CappyFailure(Codes.UnknownQuery, at + " (" + v.GetType().Name + ") has no public field \"" + name + "\"" + (names.Count > 0 ? "; it has " + string.Join(", ", names.ToArray()) : ""));
            }
            return f.GetValue(v);
        }

        // A component (or any object) whose public fields are written.
        sealed class Fields
        {
            public readonly object Target;
            public Fields(object target) { Target = target; }
        }

        /// <summary>
        /// Writes values of the game as JSON: primitives, strings and enums
        /// as such, lists and dictionaries, other objects by their public
        /// instance fields; at most 6 levels deep, 4,096 characters of a
        /// string, 256 items of a list; cycles written once. convert turns
        /// engine objects into what to write (Unity: an object reference
        /// into its name), returning its argument for the rest.
        /// </summary>
        public sealed class ValueWriter
        {
            /// <summary>The limits.</summary>
            public const int MaxDepth = 6, MaxString = 4096, MaxItems = 256;
            readonly Func<object, object> convert;
            readonly StringBuilder sb = new StringBuilder();
            readonly HashSet<object> seen = new HashSet<object>(new RefEq());

            /// <summary>A writer with an engine's conversion (or null).</summary>
            public ValueWriter(Func<object, object> convert) { this.convert = convert; }

            /// <summary>v as JSON text.</summary>
            public string Write(object v)
            {
                sb.Length = 0;
                Value(v, 0);
                return sb.ToString();
            }

            void Value(object v, int depth)
            {
                var fields = v as Fields;
                if (fields != null)
                {
                    if (fields.Target == null) { sb.Append("null"); return; }
                    if (!seen.Add(fields.Target)) { Json.WriteString(sb, "(" + fields.Target.GetType().Name + ": already written above)"); return; }
                    try { Object(fields.Target, depth, true); }
                    finally { seen.Remove(fields.Target); }
                    return;
                }
                if (v != null && convert != null && !(v is JsonObject) && !(v is string))
                {
                    object c = convert(v);
                    if (!ReferenceEquals(c, v)) { Value(c, depth); return; }
                }
                if (v == null) { sb.Append("null"); return; }
                var s = v as string;
                if (s != null) { Json.WriteString(sb, s.Length > MaxString ? s.Substring(0, MaxString) + "…" : s); return; }
                if (v is bool) { sb.Append((bool)v ? "true" : "false"); return; }
                if (v is double || v is float)
                {
                    double d = Convert.ToDouble(v);
                    if (double.IsNaN(d) || double.IsInfinity(d)) Json.WriteString(sb, d.ToString(System.Globalization.CultureInfo.InvariantCulture));
                    else Json.Write(sb, v);
                    return;
                }
                if (v.GetType().IsPrimitive || v is decimal) { Json.Write(sb, v); return; }
                if (v is Enum) { Json.WriteString(sb, v.ToString()); return; }
                if (v is Delegate) { Json.WriteString(sb, "(" + v.GetType().Name + ")"); return; }
                if (depth >= MaxDepth) { Json.WriteString(sb, "(" + v.GetType().Name + ": deeper than " + MaxDepth + " levels)"); return; }
                bool reference = !v.GetType().IsValueType;
                if (reference && !seen.Add(v)) { Json.WriteString(sb, "(" + v.GetType().Name + ": already written above)"); return; }
                try
                {
                    var jo = v as JsonObject;
                    if (jo != null)
                    {
                        sb.Append('{');
                        for (int i = 0; i < jo.Count; i++)
                        {
                            if (i > 0) sb.Append(',');
                            Json.WriteString(sb, jo.KeyAt(i));
                            sb.Append(':');
                            Value(jo.ValueAt(i), depth + 1);
                        }
                        sb.Append('}');
                        return;
                    }
                    var dict = v as IDictionary;
                    if (dict != null)
                    {
                        sb.Append('{');
                        int n = 0;
                        foreach (DictionaryEntry kv in dict)
                        {
                            if (n == MaxItems) break;
                            if (n++ > 0) sb.Append(',');
                            Json.WriteString(sb, Convert.ToString(kv.Key, System.Globalization.CultureInfo.InvariantCulture));
                            sb.Append(':');
                            Value(kv.Value, depth + 1);
                        }
                        sb.Append('}');
                        return;
                    }
                    var list = v as IEnumerable;
                    if (list != null)
                    {
                        sb.Append('[');
                        int n = 0;
                        foreach (var item in list)
                        {
                            if (n > 0) sb.Append(',');
                            if (n == MaxItems) { Json.WriteString(sb, "(more items)"); break; }
                            Value(item, depth + 1);
                            n++;
                        }
                        sb.Append(']');
                        return;
                    }
                    Object(v, depth, false);
                }
                finally
                {
                    if (reference) seen.Remove(v);
                }
            }

            void Object(object v, int depth, bool always)
            {
                if (v == null) { sb.Append("null"); return; }
                var fs = v.GetType().GetFields(BindingFlags.Public | BindingFlags.Instance);
                if (fs.Length == 0 && !always) { Json.WriteString(sb, "(" + v.GetType().Name + ")"); return; }
                sb.Append('{');
                int n = 0;
                foreach (var f in fs)
                {
                    if (n++ > 0) sb.Append(',');
                    Json.WriteString(sb, f.Name);
                    sb.Append(':');
                    object fv;
                    try { fv = f.GetValue(v); }
                    catch (Exception e) { fv = "(" + e.GetType().Name + ")"; }
                    Value(fv, depth + 1);
                }
                sb.Append('}');
            }
        }

        sealed class RefEq : IEqualityComparer<object>
        {
            public new bool Equals(object a, object b) { return ReferenceEquals(a, b); }
            public int GetHashCode(object o) { return System.Runtime.CompilerServices.RuntimeHelpers.GetHashCode(o); }
        }
    }
}
