using System;
using System.Collections.Generic;
using System.IO;
using System.Security.Cryptography;
using System.Text;

namespace Crosscode.Cappy
{
    /// <summary>
    /// A recording as its replay holds it: the seed, the game's step, how
    /// many steps ran, and the input each step saw when it changed (an
    /// agent's steps, or a player's actions as the game read them), so a
    /// replay runs the very same steps at any timeScale.
    /// </summary>
    public sealed class Recording
    {
        /// <summary>The replay format this core writes and reads.</summary>
        public const string Format = "cappy-csharp/v1";

        /// <summary>The game's id (a replay of another game is refused).</summary>
        public string Game;
        /// <summary>The seed the recording ran with.</summary>
        public long Seed;
        /// <summary>Game time a frame ran, in ms.</summary>
        public double StepMs;
        /// <summary>How many frames ran (the recording's length is Ticks * StepMs).</summary>
        public long Ticks;
        /// <summary>"agent" for an agent's play.</summary>
        public string Control;
        /// <summary>Input changes: the tick (1 is the first frame that ran) that first saw each.</summary>
        public List<KeyValuePair<long, List<InputValue>>> Inputs = new List<KeyValuePair<long, List<InputValue>>>();
        /// <summary>The ticks where an agent's steps ended (their pictures are taken there).</summary>
        public List<long> Steps = new List<long>();

        /// <summary>The recording as JSON bytes.</summary>
        public byte[] Encode()
        {
            var o = new JsonObject();
            o["format"] = Format;
            o["game"] = Game;
            o["seed"] = Seed;
            o["stepMs"] = StepMs;
            o["ticks"] = Ticks;
            if (!string.IsNullOrEmpty(Control)) o["control"] = Control;
            var inputs = new List<object>();
            foreach (var kv in Inputs)
            {
                var changes = new List<object>();
                foreach (var v in kv.Value)
                {
                    var j = v.ToJson();
                    j["kind"] = v.Kind;
                    changes.Add(j);
                }
                inputs.Add(new List<object> { kv.Key, changes });
            }
            o["inputs"] = inputs;
            if (Steps.Count > 0) o["steps"] = Steps;
            return Encoding.UTF8.GetBytes(Json.Write(o));
        }

        /// <summary>Reads a recording; throws REPLAY_INVALID saying what is wrong.</summary>
        public static Recording Decode(byte[] data)
        {
            object parsed;
            try { parsed = Json.Parse(new UTF8Encoding(false, true).GetString(data)); }
            catch (Exception e) { throw Invalid("not JSON: " + e.Message); }
            var o = parsed as JsonObject;
            if (o == null) throw Invalid("not a JSON object");
            var format = Json.Str(o, "format");
            if (format != Format) throw Invalid("format " + (format == null ? "none" : "\"" + format + "\"") + ", this adapter reads " + Format);
            var r = new Recording { Game = Json.Str(o, "game"), Control = Json.Str(o, "control") };
            double? seed = Json.Number(o, "seed"), step = Json.Number(o, "stepMs"), ticks = Json.Number(o, "ticks");
            if (!seed.HasValue || !ticks.HasValue || !step.HasValue || step.Value <= 0 || ticks.Value < 0 || ticks.Value != Math.Floor(ticks.Value))
                throw Invalid("seed, stepMs and ticks are required");
            r.Seed = (long)seed.Value;
            r.StepMs = step.Value;
            r.Ticks = (long)ticks.Value;
            var inputs = o["inputs"] as List<object>;
            if (inputs == null) throw Invalid("inputs are required");
            long last = 0;
            foreach (var item in inputs)
            {
                var pair = item as List<object>;
                if (pair == null || pair.Count != 2 || !(pair[0] is double) || !(pair[1] is List<object>)) throw Invalid("an input is not [tick, [changes]]");
                long tick = (long)(double)pair[0];
                if (tick < last || tick < 1) throw Invalid("input ticks go back");
                last = tick;
                var changes = new List<InputValue>();
                foreach (var c in (List<object>)pair[1])
                {
                    var j = c as JsonObject;
                    if (j == null) throw Invalid("an input change is not an object");
                    var v = new InputValue { Name = Json.Str(j, "name"), Kind = Json.Str(j, "kind") };
                    if (string.IsNullOrEmpty(v.Name) || string.IsNullOrEmpty(v.Kind)) throw Invalid("an input change has no name or kind");
                    if (j["pressed"] is bool) v.Pressed = (bool)j["pressed"];
                    v.Value = Json.Number(j, "value") ?? 0;
                    v.X = Json.Number(j, "x") ?? 0;
                    v.Y = Json.Number(j, "y") ?? 0;
                    v.Button = Json.Str(j, "button");
                    v.Text = Json.Str(j, "text");
                    changes.Add(v);
                }
                r.Inputs.Add(new KeyValuePair<long, List<InputValue>>(tick, changes));
            }
            var steps = o["steps"] as List<object>;
            if (steps != null)
                foreach (var s in steps)
                {
                    if (!(s is double)) throw Invalid("steps must be ticks");
                    r.Steps.Add((long)(double)s);
                }
            return r;
        }

        static CappyFailure Invalid(string why)
        {
            return new CappyFailure(Codes.ReplayInvalid, "the replay cannot be read: " + why);
        }
    }

    /// <summary>Replay payloads: inline (base64) or a file, each with its SHA-256.</summary>
    public static class ReplayPayload
    {
        /// <summary>The lowercase hex SHA-256 of data.</summary>
        public static string Sha256(byte[] data)
        {
            using (var h = SHA256.Create())
            {
                var sum = h.ComputeHash(data);
                var sb = new StringBuilder(64);
                foreach (var b in sum) sb.Append(b.ToString("x2"));
                return sb.ToString();
            }
        }

        /// <summary>
        /// A payload for data: inline when it holds at most 1 MiB, else a
        /// file written in dir (its absolute path, size and SHA-256).
        /// </summary>
        public static JsonObject Make(byte[] data, string format, string dir, int inlineMax = Wire.MaxInlineReplayBytes)
        {
            var p = new JsonObject();
            string sum = Sha256(data);
            if (data.Length <= inlineMax)
            {
                p["kind"] = "inline";
                p["encoding"] = "base64";
                p["data"] = Convert.ToBase64String(data);
            }
            else
            {
                Directory.CreateDirectory(dir);
                string path = Path.GetFullPath(Path.Combine(dir, "replay-" + sum.Substring(0, 16) + ".json"));
                File.WriteAllBytes(path, data);
                p["kind"] = "file";
                p["path"] = path;
                p["bytes"] = (long)data.Length;
            }
            p["sha256"] = sum;
            p["format"] = format;
            return p;
        }

        /// <summary>
        /// A payload's data, its size and SHA-256 checked; throws
        /// REPLAY_INVALID (and REPLAY_UNSUPPORTED for a kind it does not know).
        /// </summary>
        public static byte[] Read(object payload, long maxFileBytes = 1L << 30)
        {
            var p = payload as JsonObject;
            if (p == null) throw new CappyFailure(Codes.ReplayInvalid, "the replay is not an object");
            string kind = Json.Str(p, "kind"), sum = Json.Str(p, "sha256");
            if (sum == null || sum.Length != 64) throw new CappyFailure(Codes.ReplayInvalid, "the replay has no sha256");
            byte[] data;
            switch (kind)
            {
                case "inline":
                    if (Json.Str(p, "encoding") != "base64") throw new CappyFailure(Codes.ReplayInvalid, "an inline replay's encoding must be base64");
                    try { data = Convert.FromBase64String(Json.Str(p, "data") ?? ""); }
                    catch (FormatException) { throw new CappyFailure(Codes.ReplayInvalid, "an inline replay's data is not base64"); }
                    if (data.Length > Wire.MaxInlineReplayBytes) throw new CappyFailure(Codes.ReplayInvalid, "an inline replay holds at most 1 MiB");
                    break;
                case "file":
                    string path = Json.Str(p, "path");
                    double? bytes = Json.Number(p, "bytes");
                    if (string.IsNullOrEmpty(path) || !bytes.HasValue) throw new CappyFailure(Codes.ReplayInvalid, "a file replay needs path and bytes");
                    if (bytes.Value > maxFileBytes) throw new CappyFailure(Codes.ReplayInvalid, "the replay file is " + bytes.Value + " bytes, more than " + maxFileBytes);
                    try { data = File.ReadAllBytes(path); }
                    catch (Exception e) { throw new CappyFailure(Codes.ReplayInvalid, "the replay file: " + e.Message); }
                    if (data.Length != (long)bytes.Value) throw new CappyFailure(Codes.ReplayInvalid, "the replay file " + path + " is not " + bytes.Value + " bytes");
                    break;
                default:
                    throw new CappyFailure(Codes.ReplayUnsupported, "replays of kind \"" + kind + "\" are not read by this adapter");
            }
            string got = Sha256(data);
            if (!string.Equals(got, sum, StringComparison.OrdinalIgnoreCase))
                throw new CappyFailure(Codes.ReplayInvalid, "the replay's SHA-256 is " + got + ", expected " + sum);
            return data;
        }
    }
}
