using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Crosscode.Cappy
{
    /// <summary>
    /// The protocol's checks, as the controller makes them (the Go package
    /// protocol): what an adapter checks again before it answers, and what
    /// it checks of its own messages before it sends them.
    /// </summary>
    public static class Checks
    {
        static readonly UTF8Encoding Utf8 = new UTF8Encoding(false, true);

        /// <summary>The UTF-8 length of s.</summary>
        public static int Bytes(string s)
        {
            return s == null ? 0 : Utf8.GetByteCount(s);
        }

        /// <summary>
        /// Why s is not an id (1 to max bytes, no control, invisible or
        /// bidirectional characters, no leading, trailing or double
        /// spaces), or null when it is one.
        /// </summary>
        public static string Id(string s, int max = Wire.MaxIdBytes)
        {
            if (string.IsNullOrEmpty(s)) return "required";
            int n;
            try { n = Bytes(s); } catch (EncoderFallbackException) { return "not valid UTF-8"; }
            if (n > max) return "too long: " + n + " bytes, at most " + max;
            if (s.Trim() != s) return "has leading or trailing space";
            for (int i = 0; i < s.Length; i++)
            {
                char c = s[i];
                if (char.IsControl(c)) return "contains a control character";
                if (char.IsWhiteSpace(c) && c != ' ') return "contains white space other than single spaces";
                if (c == ' ' && i + 1 < s.Length && s[i + 1] == ' ') return "contains a double space";
                if (Invisible(s, i)) return "contains invisible, bidi or tag characters";
            }
            return null;
        }

        /// <summary>Why s is not free text of at most max bytes (newlines and tabs allowed), or null.</summary>
        public static string Text(string s, int max, bool required)
        {
            if (string.IsNullOrEmpty(s)) return required ? "required" : null;
            int n;
            try { n = Bytes(s); } catch (EncoderFallbackException) { return "not valid UTF-8"; }
            if (n > max) return "too long: " + n + " bytes, at most " + max;
            foreach (char c in s)
                if (char.IsControl(c) && c != '\n' && c != '\t' && c != '\r') return "contains a control character";
            return null;
        }

        static bool Invisible(string s, int i)
        {
            char c = s[i];
            if (char.IsSurrogate(c))
            {
                // Tags (U+E0000..U+E007F) and other format characters beyond the BMP.
                if (!char.IsHighSurrogate(c) || i + 1 >= s.Length) return true;
                int cp = char.ConvertToUtf32(c, s[i + 1]);
                return cp >= 0xE0000 && cp <= 0xE007F;
            }
            var cat = CharUnicodeInfo.GetUnicodeCategory(c);
            return cat == UnicodeCategory.Format || cat == UnicodeCategory.LineSeparator || cat == UnicodeCategory.ParagraphSeparator ||
                c == '\u115F' || c == '\u1160' || c == '\u3164' || c == '\uFFA0';
        }

        /// <summary>Cuts s to at most max UTF-8 bytes, on a character boundary.</summary>
        public static string Cap(string s, int max)
        {
            if (s == null || Bytes(s) <= max) return s;
            var sb = new StringBuilder();
            int n = 0;
            for (int i = 0; i < s.Length; i++)
            {
                int len = char.IsHighSurrogate(s[i]) && i + 1 < s.Length ? 2 : 1;
                int b = Bytes(s.Substring(i, len));
                if (n + b > max) break;
                sb.Append(s, i, len);
                n += b;
                i += len - 1;
            }
            return sb.ToString();
        }

        /// <summary>Checks a parameter's description as the controller checks a registry.</summary>
        public static string ParameterSpec(string name, Parameter p)
        {
            string why = Id(name);
            if (why != null) return "parameter name \"" + name + "\": " + why;
            if (p == null) return name + ": no description";
            if (p.Type != "string" && p.Type != "number" && p.Type != "integer" && p.Type != "boolean")
                return name + ": type must be string, number, integer or boolean";
            if ((p.Minimum.HasValue || p.Maximum.HasValue) && p.Type != "number" && p.Type != "integer")
                return name + ": minimum and maximum are for numbers";
            if (p.Minimum.HasValue && p.Maximum.HasValue && p.Minimum.Value > p.Maximum.Value)
                return name + ": minimum exceeds maximum";
            if (p.Enum != null)
                foreach (var e in p.Enum)
                {
                    string ew = Value(name, p, Normalize(e), false);
                    if (ew != null) return name + ": enum value " + Json.Write(Normalize(e)) + ": " + ew;
                }
            if (p.Default != null)
            {
                string dw = Value(name, p, Normalize(p.Default), true);
                if (dw != null) return name + ": default: " + dw;
            }
            return null;
        }

        // Numbers compare as doubles, as parsed JSON holds them.
        static object Normalize(object v)
        {
            if (v is int || v is long || v is float || v is short || v is byte || v is uint || v is decimal)
                return Convert.ToDouble(v, CultureInfo.InvariantCulture);
            return v;
        }

        /// <summary>Why v does not fit p, or null (protocol's CheckParameter).</summary>
        public static string Value(string name, Parameter p, object v, bool checkEnum = true)
        {
            switch (p.Type)
            {
                case "string":
                    if (!(v is string)) return name + " must be a string";
                    break;
                case "boolean":
                    if (!(v is bool)) return name + " must be a boolean";
                    break;
                case "number":
                case "integer":
                    if (!(v is double)) return name + " must be a number";
                    double f = (double)v;
                    if (p.Type == "integer" && f != Math.Floor(f)) return name + " must be an integer";
                    if (p.Minimum.HasValue && f < p.Minimum.Value) return name + " must be at least " + Fmt.Num(p.Minimum.Value);
                    if (p.Maximum.HasValue && f > p.Maximum.Value) return name + " must be at most " + Fmt.Num(p.Maximum.Value);
                    break;
            }
            if (checkEnum && p.Enum != null && p.Enum.Length > 0)
            {
                foreach (var e in p.Enum)
                    if (Equals(Normalize(e), v)) return null;
                var names = new List<object>();
                foreach (var e in p.Enum) names.Add(Normalize(e));
                return name + " must be one of " + Json.Write(names);
            }
            return null;
        }

        /// <summary>
        /// A scenario's arguments checked against its parameters, defaults
        /// filled in; throws INVALID_PARAMETERS.
        /// </summary>
        public static JsonObject Resolve(string scenario, IDictionary<string, Parameter> parameters, JsonObject args)
        {
            var outp = new JsonObject();
            if (args != null)
                foreach (var kv in args)
                {
                    Parameter p;
                    if (parameters == null || !parameters.TryGetValue(kv.Key, out p))
                        throw new CappyFailure(Codes.InvalidParameters, "scenario \"" + scenario + "\" has no parameter \"" + kv.Key + "\"");
                    string why = Value(kv.Key, p, kv.Value);
                    if (why != null) throw new CappyFailure(Codes.InvalidParameters, why);
                    outp[kv.Key] = kv.Value;
                }
            if (parameters != null)
                foreach (var kv in parameters)
                {
                    if (outp.ContainsKey(kv.Key)) continue;
                    if (kv.Value.Default != null) outp[kv.Key] = Normalize(kv.Value.Default);
                    else if (kv.Value.Required) throw new CappyFailure(Codes.InvalidParameters, kv.Key + " is required by scenario \"" + scenario + "\"");
                }
            return outp;
        }

        /// <summary>A presentation checked as the controller checks it; throws with its code.</summary>
        public static void Presentation(JsonObject p, Func<string, bool> has)
        {
            if (p == null) return;
            object v;
            if (p.TryGetValue("timeScale", out v))
            {
                if (!(v is double)) throw new CappyFailure(Codes.PresentationUnsupported, "presentation.timeScale must be a number from 0.1 to 4");
                double f = (double)v;
                if (!(f >= Wire.MinTimeScale && f <= Wire.MaxTimeScale)) throw new CappyFailure(Codes.PresentationUnsupported, "presentation.timeScale must be a number from 0.1 to 4, got " + Fmt.Num(f));
                if (!has(Capability.TimeScale)) throw new CappyFailure(Codes.CapabilityMissing, "presentation.timeScale needs capability time_scale, which this game does not advertise");
            }
            if (p.TryGetValue("camera", out v))
            {
                var s = v as string;
                if (string.IsNullOrEmpty(s)) throw new CappyFailure(Codes.PresentationUnsupported, "presentation.camera must be a camera name");
                if (!has(Capability.AlternateCameras)) throw new CappyFailure(Codes.CapabilityMissing, "presentation.camera needs capability alternate_cameras, which this game does not advertise");
            }
        }

        /// <summary>A frames request checked; throws PROTOCOL_INVALID_MESSAGE.</summary>
        public static FramesRequest Frames(object v)
        {
            var o = v as JsonObject;
            if (o == null) throw new CappyFailure(Codes.InvalidMessage, "frames must be an object {fps, maxWidth, formats}");
            var r = new FramesRequest();
            double? fps = Json.Number(o, "fps"), mw = Json.Number(o, "maxWidth");
            if (!fps.HasValue || !(fps.Value >= Wire.MinFps && fps.Value <= Wire.MaxFps)) throw new CappyFailure(Codes.InvalidMessage, "frames.fps must be from 0.1 to 30");
            if (!mw.HasValue || mw.Value != Math.Floor(mw.Value) || mw.Value < 16 || mw.Value > Wire.MaxFrameSide) throw new CappyFailure(Codes.InvalidMessage, "frames.maxWidth must be a whole number from 16 to 4096");
            r.Fps = fps.Value;
            r.MaxWidth = (int)mw.Value;
            var formats = o["formats"] as List<object>;
            if (formats == null || formats.Count == 0) throw new CappyFailure(Codes.InvalidMessage, "frames.formats must list image types");
            foreach (var f in formats)
            {
                var s = f as string;
                if (s == null) throw new CappyFailure(Codes.InvalidMessage, "frames.formats must list image types");
                r.Formats.Add(s);
            }
            return r;
        }

        /// <summary>
        /// A step's inputs checked against the declared actions; returns
        /// them as values, or throws INVALID_INPUT saying what is wrong.
        /// Pointer coordinates stay in the frame's pixels.
        /// </summary>
        public static List<InputValue> StepInputs(object actions, IList<GameAction> declared)
        {
            var outp = new List<InputValue>();
            if (actions == null) return outp;
            var list = actions as List<object>;
            if (list == null) throw new CappyFailure(Codes.InvalidInput, "actions must be a list");
            if (list.Count > Wire.MaxStepActions) throw new CappyFailure(Codes.InvalidInput, "too many actions: " + list.Count + ", at most " + Wire.MaxStepActions + " in one step");
            for (int i = 0; i < list.Count; i++)
                outp.Add(StepInput("actions[" + i + "]", list[i] as JsonObject, declared));
            return outp;
        }

        static InputValue StepInput(string field, JsonObject a, IList<GameAction> declared)
        {
            if (a == null) throw Bad(field, "must be an object {name, ...}");
            var name = a["name"] as string;
            if (string.IsNullOrEmpty(name)) throw Bad(field + ".name", "required");
            GameAction act = null;
            var names = new List<string>();
            foreach (var d in declared)
            {
                names.Add(d.Name);
                if (d.Name == name) act = d;
            }
            if (act == null) throw Bad(field + ".name", "unknown action \"" + name + "\"; the game's actions are " + string.Join(", ", names.ToArray()));
            var v = new InputValue { Name = name, Kind = act.Kind };
            var allowed = new HashSet<string> { "name" };
            switch (act.Kind)
            {
                case ActionKind.Button:
                    allowed.Add("pressed");
                    if (!(a["pressed"] is bool)) throw Bad(field + ".pressed", "required for a button action (true or false)");
                    v.Pressed = (bool)a["pressed"];
                    break;
                case ActionKind.Axis:
                    allowed.Add("value");
                    v.Value = Unit(field + ".value", a["value"], act.Kind);
                    break;
                case ActionKind.Axis2D:
                    allowed.Add("x"); allowed.Add("y");
                    v.X = Unit(field + ".x", a["x"], act.Kind);
                    v.Y = Unit(field + ".y", a["y"], act.Kind);
                    break;
                case ActionKind.Pointer:
                    allowed.Add("x"); allowed.Add("y"); allowed.Add("button"); allowed.Add("pressed");
                    v.X = Pixel(field + ".x", a["x"]);
                    v.Y = Pixel(field + ".y", a["y"]);
                    if (a.ContainsKey("button"))
                    {
                        var b = a["button"] as string;
                        if (b != "left" && b != "middle" && b != "right") throw Bad(field + ".button", "must be left, middle or right");
                        v.Button = b;
                    }
                    if (a.ContainsKey("pressed"))
                    {
                        if (!(a["pressed"] is bool)) throw Bad(field + ".pressed", "must be true or false");
                        v.Pressed = (bool)a["pressed"];
                    }
                    break;
                case ActionKind.Text:
                    allowed.Add("text");
                    var t = a["text"] as string;
                    if (t == null) throw Bad(field + ".text", "required for a text action");
                    string tw = Text(t, Wire.MaxActionTextBytes, false);
                    if (tw != null) throw Bad(field + ".text", tw);
                    v.Text = t;
                    break;
            }
            foreach (var k in a.Keys)
                if (!allowed.Contains(k)) throw Bad(field + "." + k, "a " + act.Kind + " action has no " + k);
            return v;
        }

        static double Unit(string field, object v, string kind)
        {
            if (!(v is double)) throw Bad(field, "required for a " + kind + " action (a number from -1 to 1)");
            double d = (double)v;
            if (!(d >= -1 && d <= 1)) throw Bad(field, "must be from -1 to 1, got " + Fmt.Num(d));
            return d;
        }

        static double Pixel(string field, object v)
        {
            if (!(v is double)) throw Bad(field, "required for a pointer action (pixels of the game's frames)");
            double d = (double)v;
            if (!(d >= 0 && d <= Wire.MaxFrameSide)) throw Bad(field, "must be from 0 to 4096 pixels, got " + Fmt.Num(d));
            return d;
        }

        static CappyFailure Bad(string field, string why)
        {
            return new CappyFailure(Codes.InvalidInput, field + ": " + why);
        }

        /// <summary>The game's actions checked as the controller will check them; throws ArgumentException.</summary>
        public static void Actions(IList<GameAction> actions)
        {
            if (actions.Count > Wire.MaxActions) throw new ArgumentException("the game declares " + actions.Count + " actions, at most " + Wire.MaxActions);
            var seen = new HashSet<string>();
            foreach (var a in actions)
            {
                string why = Id(a.Name, Wire.MaxActionNameBytes);
                if (why != null) throw new ArgumentException("action \"" + a.Name + "\": " + why);
                if (!seen.Add(a.Name)) throw new ArgumentException("action \"" + a.Name + "\" is declared twice");
                if (a.Kind != ActionKind.Button && a.Kind != ActionKind.Axis && a.Kind != ActionKind.Axis2D && a.Kind != ActionKind.Pointer && a.Kind != ActionKind.Text)
                    throw new ArgumentException("action \"" + a.Name + "\": kind must be button, axis, axis2d, pointer or text");
                why = Text(a.Description, Wire.MaxActionDescBytes, false);
                if (why != null) throw new ArgumentException("action \"" + a.Name + "\": description " + why);
            }
        }
    }
}
