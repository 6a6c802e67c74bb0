using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Crosscode.Cappy
{
    /// <summary>
    /// A small, strict JSON reader and writer (RFC 8259), enough for the
    /// Cappy protocol: no System.Text.Json or Newtonsoft is needed, so the
    /// core builds the same in Unity and under Mono.
    /// </summary>
    /// <remarks>
    /// Parse gives: null, bool, string, double (every number),
    /// <see cref="JsonObject"/> (keys in their order) and
    /// <c>List&lt;object&gt;</c>. Write takes those and also any integer or
    /// floating type, IDictionary with string keys, IEnumerable, and
    /// <see cref="JsonRaw"/> (text written as is). Numbers are written with
    /// the invariant culture, whole ones without a fraction.
    /// </remarks>
    public static class Json
    {
        /// <summary>The deepest nesting Parse accepts.</summary>
        public const int MaxDepth = 64;

        /// <summary>Parses one JSON value; throws <see cref="FormatException"/> on anything else.</summary>
        public static object Parse(string text)
        {
            if (text == null) throw new FormatException("no JSON text");
            var r = new Reader(text);
            r.SkipSpace();
            object v = r.Value(0);
            r.SkipSpace();
            if (r.Pos != text.Length) throw r.Error("unexpected text after the value");
            return v;
        }

        /// <summary>Writes a value as JSON text.</summary>
        public static string Write(object value)
        {
            var sb = new StringBuilder();
            Write(sb, value);
            return sb.ToString();
        }

        /// <summary>Appends a value as JSON text.</summary>
        public static void Write(StringBuilder sb, object value)
        {
            WriteValue(sb, value, 0);
        }

        /// <summary>Appends s as a JSON string.</summary>
        public static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            for (int i = 0; i < s.Length; i++)
            {
                char c = s[i];
                switch (c)
                {
                    case '"': sb.Append("\\\""); break;
                    case '\\': sb.Append("\\\\"); break;
                    case '\n': sb.Append("\\n"); break;
                    case '\r': sb.Append("\\r"); break;
                    case '\t': sb.Append("\\t"); break;
                    case '\b': sb.Append("\\b"); break;
                    case '\f': sb.Append("\\f"); break;
                    default:
                        if (c < 0x20 || c == '\u2028' || c == '\u2029' || (char.IsSurrogate(c) && !ValidSurrogate(s, i)))
                        {
                            // Lone surrogates become U+FFFD: the text stays valid UTF-8.
                            int code = char.IsSurrogate(c) ? 0xFFFD : c;
                            sb.Append("\\u").Append(code.ToString("x4", CultureInfo.InvariantCulture));
                        }
                        else
                        {
                            sb.Append(c);
                            if (char.IsHighSurrogate(c)) { sb.Append(s[i + 1]); i++; }
                        }
                        break;
                }
            }
            sb.Append('"');
        }

        static bool ValidSurrogate(string s, int i)
        {
            return char.IsHighSurrogate(s[i]) && i + 1 < s.Length && char.IsLowSurrogate(s[i + 1]);
        }

        /// <summary>Appends a number as JSON: whole values without a fraction, others in their shortest round-trip form.</summary>
        public static void WriteNumber(StringBuilder sb, double d)
        {
            if (double.IsNaN(d) || double.IsInfinity(d)) throw new ArgumentException("JSON has no NaN or infinite numbers");
            if (d == 0) { sb.Append('0'); return; }
            if (d == Math.Floor(d) && Math.Abs(d) < 1e15)
            {
                sb.Append(((long)d).ToString(CultureInfo.InvariantCulture));
                return;
            }
            string r = d.ToString("R", CultureInfo.InvariantCulture);
            // "1E-07" -> "1e-7", as JSON writers usually do.
            int e = r.IndexOf('E');
            if (e >= 0)
            {
                string mant = r.Substring(0, e);
                string exp = r.Substring(e + 1);
                int x = int.Parse(exp, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture);
                r = mant + "e" + x.ToString(CultureInfo.InvariantCulture);
            }
            sb.Append(r);
        }

        static void WriteValue(StringBuilder sb, object v, int depth)
        {
            if (depth > MaxDepth) throw new ArgumentException("JSON nested deeper than " + MaxDepth);
            if (v == null) { sb.Append("null"); return; }
            var raw = v as JsonRaw;
            if (raw != null) { sb.Append(raw.Text); return; }
            var s = v as string;
            if (s != null) { WriteString(sb, s); return; }
            if (v is bool) { sb.Append((bool)v ? "true" : "false"); return; }
            if (v is double) { WriteNumber(sb, (double)v); return; }
            if (v is float) { WriteNumber(sb, ShortFloat((float)v)); return; }
            if (v is int || v is long || v is short || v is sbyte || v is byte || v is ushort || v is uint)
            {
                sb.Append(Convert.ToInt64(v, CultureInfo.InvariantCulture).ToString(CultureInfo.InvariantCulture));
                return;
            }
            if (v is ulong) { sb.Append(((ulong)v).ToString(CultureInfo.InvariantCulture)); return; }
            if (v is decimal) { sb.Append(((decimal)v).ToString(CultureInfo.InvariantCulture)); return; }
            if (v is char) { WriteString(sb, v.ToString()); return; }
            var dict = v as IDictionary;
            if (dict != null)
            {
                sb.Append('{');
                bool first = true;
                foreach (DictionaryEntry kv in dict)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, Convert.ToString(kv.Key, CultureInfo.InvariantCulture));
                    sb.Append(':');
                    WriteValue(sb, kv.Value, depth + 1);
                }
                sb.Append('}');
                return;
            }
            var obj = v as JsonObject;
            if (obj != null)
            {
                sb.Append('{');
                for (int i = 0; i < obj.Count; i++)
                {
                    if (i > 0) sb.Append(',');
                    WriteString(sb, obj.KeyAt(i));
                    sb.Append(':');
                    WriteValue(sb, obj.ValueAt(i), depth + 1);
                }
                sb.Append('}');
                return;
            }
            var list = v as IEnumerable;
            if (list != null)
            {
                sb.Append('[');
                bool first = true;
                foreach (object item in list)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteValue(sb, item, depth + 1);
                }
                sb.Append(']');
                return;
            }
            throw new ArgumentException("cannot write a " + v.GetType().Name + " as JSON");
        }

        // A float written as the shortest decimal that reads back as the
        // same float (0.1f is 0.1, not 0.100000001490116).
        static double ShortFloat(float f)
        {
            if (float.IsNaN(f) || float.IsInfinity(f)) return f;
            return double.Parse(f.ToString("R", CultureInfo.InvariantCulture), CultureInfo.InvariantCulture);
        }

        /// <summary>A number of a parsed object (null when absent or not a number).</summary>
        public static double? Number(JsonObject o, string key)
        {
            object v;
            if (o == null || !o.TryGetValue(key, out v) || v == null) return null;
            if (v is double) return (double)v;
            if (v is int || v is long || v is float) return Convert.ToDouble(v, CultureInfo.InvariantCulture);
            return null;
        }

        /// <summary>A string of a parsed object (null when absent or not a string).</summary>
        public static string Str(JsonObject o, string key)
        {
            object v;
            if (o == null || !o.TryGetValue(key, out v)) return null;
            return v as string;
        }

        sealed class Reader
        {
            readonly string s;
            public int Pos;

            public Reader(string s) { this.s = s; }

            public FormatException Error(string why)
            {
                return new FormatException("JSON: " + why + " at offset " + Pos);
            }

            public void SkipSpace()
            {
                while (Pos < s.Length)
                {
                    char c = s[Pos];
                    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') Pos++;
                    else break;
                }
            }

            public object Value(int depth)
            {
                if (depth > MaxDepth) throw Error("nested deeper than " + MaxDepth);
                if (Pos >= s.Length) throw Error("unexpected end");
                char c = s[Pos];
                switch (c)
                {
                    case '{': return Object(depth);
                    case '[': return Array(depth);
                    case '"': return String();
                    case 't': Word("true"); return true;
                    case 'f': Word("false"); return false;
                    case 'n': Word("null"); return null;
                    default:
                        if (c == '-' || (c >= '0' && c <= '9')) return NumberValue();
                        throw Error("unexpected character '" + c + "'");
                }
            }

            void Word(string w)
            {
                if (string.CompareOrdinal(s, Pos, w, 0, w.Length) != 0) throw Error("expected " + w);
                Pos += w.Length;
            }

            JsonObject Object(int depth)
            {
                var o = new JsonObject();
                Pos++;
                SkipSpace();
                if (Pos < s.Length && s[Pos] == '}') { Pos++; return o; }
                while (true)
                {
                    SkipSpace();
                    if (Pos >= s.Length || s[Pos] != '"') throw Error("expected a key");
                    string key = String();
                    SkipSpace();
                    if (Pos >= s.Length || s[Pos] != ':') throw Error("expected ':'");
                    Pos++;
                    SkipSpace();
                    object v = Value(depth + 1);
                    if (o.ContainsKey(key)) throw Error("duplicate key \"" + key + "\"");
                    o.Add(key, v);
                    SkipSpace();
                    if (Pos >= s.Length) throw Error("unexpected end in an object");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == '}') { Pos++; return o; }
                    throw Error("expected ',' or '}'");
                }
            }

            List<object> Array(int depth)
            {
                var a = new List<object>();
                Pos++;
                SkipSpace();
                if (Pos < s.Length && s[Pos] == ']') { Pos++; return a; }
                while (true)
                {
                    SkipSpace();
                    a.Add(Value(depth + 1));
                    SkipSpace();
                    if (Pos >= s.Length) throw Error("unexpected end in an array");
                    if (s[Pos] == ',') { Pos++; continue; }
                    if (s[Pos] == ']') { Pos++; return a; }
                    throw Error("expected ',' or ']'");
                }
            }

            string String()
            {
                Pos++; // the opening quote
                int start = Pos;
                // The common case: no escapes.
                while (Pos < s.Length)
                {
                    char c = s[Pos];
                    if (c == '"') { string plain = s.Substring(start, Pos - start); Pos++; return plain; }
                    if (c == '\\') break;
                    if (c < 0x20) throw Error("control character in a string");
                    Pos++;
                }
                var sb = new StringBuilder(s, start, Pos - start, Pos - start + 16);
                while (Pos < s.Length)
                {
                    char c = s[Pos++];
                    if (c == '"') return sb.ToString();
                    if (c < 0x20) { Pos--; throw Error("control character in a string"); }
                    if (c != '\\') { sb.Append(c); continue; }
                    if (Pos >= s.Length) break;
                    char e = s[Pos++];
                    switch (e)
                    {
                        case '"': sb.Append('"'); break;
                        case '\\': sb.Append('\\'); break;
                        case '/': sb.Append('/'); break;
                        case 'b': sb.Append('\b'); break;
                        case 'f': sb.Append('\f'); break;
                        case 'n': sb.Append('\n'); break;
                        case 'r': sb.Append('\r'); break;
                        case 't': sb.Append('\t'); break;
                        case 'u':
                            if (Pos + 4 > s.Length) throw Error("short \\u escape");
                            int code;
                            if (!int.TryParse(s.Substring(Pos, 4), NumberStyles.AllowHexSpecifier, CultureInfo.InvariantCulture, out code)) throw Error("bad \\u escape");
                            Pos += 4;
                            sb.Append((char)code);
                            break;
                        default:
                            throw Error("bad escape \\" + e);
                    }
                }
                throw Error("unterminated string");
            }

            double NumberValue()
            {
                int start = Pos;
                if (s[Pos] == '-') Pos++;
                if (Pos >= s.Length) throw Error("bad number");
                if (s[Pos] == '0') Pos++;
                else if (s[Pos] >= '1' && s[Pos] <= '9') { while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++; }
                else throw Error("bad number");
                if (Pos < s.Length && s[Pos] == '.')
                {
                    Pos++;
                    int d = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == d) throw Error("bad number");
                }
                if (Pos < s.Length && (s[Pos] == 'e' || s[Pos] == 'E'))
                {
                    Pos++;
                    if (Pos < s.Length && (s[Pos] == '+' || s[Pos] == '-')) Pos++;
                    int d = Pos;
                    while (Pos < s.Length && s[Pos] >= '0' && s[Pos] <= '9') Pos++;
                    if (Pos == d) throw Error("bad number");
                }
                double v;
                if (!double.TryParse(s.Substring(start, Pos - start), NumberStyles.Float, CultureInfo.InvariantCulture, out v) || double.IsInfinity(v))
                    throw Error("number out of range");
                return v;
            }
        }
    }

    /// <summary>A JSON object as parsed: its keys in order.</summary>
    public sealed class JsonObject : IEnumerable<KeyValuePair<string, object>>
    {
        readonly List<string> keys = new List<string>();
        readonly Dictionary<string, object> values = new Dictionary<string, object>(StringComparer.Ordinal);

        /// <summary>The number of keys.</summary>
        public int Count { get { return keys.Count; } }
        /// <summary>The keys, in order.</summary>
        public IList<string> Keys { get { return keys; } }

        /// <summary>The key at index i.</summary>
        public string KeyAt(int i) { return keys[i]; }
        /// <summary>The value at index i.</summary>
        public object ValueAt(int i) { return values[keys[i]]; }
        /// <summary>Whether the object has key.</summary>
        public bool ContainsKey(string key) { return values.ContainsKey(key); }
        /// <summary>The value of key, if any.</summary>
        public bool TryGetValue(string key, out object value) { return values.TryGetValue(key, out value); }

        /// <summary>Adds a key (the last one wins when it is there already).</summary>
        public void Add(string key, object value)
        {
            if (!values.ContainsKey(key)) keys.Add(key);
            values[key] = value;
        }

        /// <summary>The value of key, or null.</summary>
        public object this[string key]
        {
            get { object v; return values.TryGetValue(key, out v) ? v : null; }
            set { Add(key, value); }
        }

        /// <summary>Removes a key.</summary>
        public bool Remove(string key)
        {
            if (!values.Remove(key)) return false;
            keys.Remove(key);
            return true;
        }

        /// <inheritdoc/>
        public IEnumerator<KeyValuePair<string, object>> GetEnumerator()
        {
            foreach (var k in keys) yield return new KeyValuePair<string, object>(k, values[k]);
        }

        IEnumerator IEnumerable.GetEnumerator() { return GetEnumerator(); }
    }

    /// <summary>JSON text written as is by <see cref="Json.Write(object)"/>.</summary>
    public sealed class JsonRaw
    {
        /// <summary>The JSON text.</summary>
        public readonly string Text;
        /// <summary>Wraps JSON text (not checked).</summary>
        public JsonRaw(string text) { Text = text; }
    }
}
