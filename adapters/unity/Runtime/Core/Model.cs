using System;
using System.Collections.Generic;
using System.Globalization;

namespace Crosscode.Cappy
{
    /// <summary>
    /// An error with a protocol code: thrown by a scenario (or by checks),
    /// it is sent as failed with that code.
    /// </summary>
    public class CappyFailure : Exception
    {
        /// <summary>The code (SCENARIO_NOT_FOUND, the game's own, ...).</summary>
        public readonly string Code;
        /// <summary>A failure with a code and a message for the agent.</summary>
        public CappyFailure(string code, string message) : base(message) { Code = code; }
    }

    /// <summary>An action an agent can take (capability input).</summary>
    public sealed class GameAction
    {
        /// <summary>What a step names: an identifier of at most 128 bytes.</summary>
        public string Name;
        /// <summary>One of <see cref="ActionKind"/>.</summary>
        public string Kind;
        /// <summary>What it does in the game, for the agent (optional).</summary>
        public string Description;

        /// <summary>An action.</summary>
        public GameAction(string name, string kind, string description)
        {
            Name = name; Kind = kind; Description = description;
        }
    }

    /// <summary>One input of a step, checked against its action's kind.</summary>
    public sealed class InputValue
    {
        /// <summary>The action's name.</summary>
        public string Name;
        /// <summary>The action's kind.</summary>
        public string Kind;
        /// <summary>A button's state; a pointer's, when set.</summary>
        public bool? Pressed;
        /// <summary>An axis's value, -1 to 1.</summary>
        public double Value;
        /// <summary>An axis2d's x and y (-1 to 1), a pointer's (screen pixels from the top left).</summary>
        public double X, Y;
        /// <summary>A pointer's button: left, middle or right.</summary>
        public string Button;
        /// <summary>A text action's text.</summary>
        public string Text;

        /// <summary>A copy.</summary>
        public InputValue Clone()
        {
            return (InputValue)MemberwiseClone();
        }

        /// <summary>Whether two inputs set the same.</summary>
        public bool SameAs(InputValue o)
        {
            return o != null && o.Name == Name && o.Kind == Kind && o.Pressed == Pressed && o.Value == Value &&
                o.X == X && o.Y == Y && o.Button == Button && o.Text == Text;
        }

        /// <summary>The input as the protocol writes it (a step's action, a replay's entry).</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["name"] = Name;
            switch (Kind)
            {
                case ActionKind.Button: o["pressed"] = Pressed == true; break;
                case ActionKind.Axis: o["value"] = Value; break;
                case ActionKind.Axis2D: o["x"] = X; o["y"] = Y; break;
                case ActionKind.Pointer:
                    o["x"] = X; o["y"] = Y;
                    if (Button != null) o["button"] = Button;
                    if (Pressed.HasValue) o["pressed"] = Pressed.Value;
                    break;
                case ActionKind.Text: o["text"] = Text ?? ""; break;
            }
            return o;
        }

        /// <inheritdoc/>
        public override string ToString()
        {
            return Json.Write(ToJson());
        }
    }

    /// <summary>A scenario's parameter (docs/adapter-protocol.md, The scenario registry).</summary>
    public sealed class Parameter
    {
        /// <summary>string, number, integer or boolean.</summary>
        public string Type;
        /// <summary>For agents to read (optional).</summary>
        public string Description;
        /// <summary>Whether an agent must give it.</summary>
        public bool Required;
        /// <summary>Its value when not given: a string, double or bool (optional).</summary>
        public object Default;
        /// <summary>The values it may take (optional).</summary>
        public object[] Enum;
        /// <summary>The bounds of a number (optional).</summary>
        public double? Minimum, Maximum;

        /// <summary>An integer from min to max, def when not given.</summary>
        public static Parameter Integer(double? min = null, double? max = null, double? def = null, string description = null)
        {
            return new Parameter { Type = "integer", Minimum = min, Maximum = max, Default = def.HasValue ? (object)def.Value : null, Description = description };
        }

        /// <summary>A number from min to max, def when not given.</summary>
        public static Parameter Number(double? min = null, double? max = null, double? def = null, string description = null)
        {
            return new Parameter { Type = "number", Minimum = min, Maximum = max, Default = def.HasValue ? (object)def.Value : null, Description = description };
        }

        /// <summary>A string, one of values when any are given.</summary>
        public static Parameter String(string def = null, string description = null, params string[] values)
        {
            return new Parameter { Type = "string", Default = def, Description = description, Enum = values != null && values.Length > 0 ? Array.ConvertAll(values, v => (object)v) : null };
        }

        /// <summary>A boolean, def when not given.</summary>
        public static Parameter Boolean(bool? def = null, string description = null)
        {
            return new Parameter { Type = "boolean", Default = def.HasValue ? (object)def.Value : null, Description = description };
        }

        /// <summary>Marks the parameter required.</summary>
        public Parameter MustGive()
        {
            Required = true;
            return this;
        }

        /// <summary>The parameter as the registry writes it.</summary>
        public JsonObject ToJson()
        {
            var o = new JsonObject();
            o["type"] = Type;
            if (!string.IsNullOrEmpty(Description)) o["description"] = Description;
            if (Required) o["required"] = true;
            if (Default != null) o["default"] = Default;
            if (Enum != null && Enum.Length > 0) o["enum"] = new List<object>(Enum);
            if (Minimum.HasValue) o["minimum"] = Minimum.Value;
            if (Maximum.HasValue) o["maximum"] = Maximum.Value;
            return o;
        }
    }

    /// <summary>What the controller asks of an operation's frames.</summary>
    public sealed class FramesRequest
    {
        /// <summary>Frames a second of presented time, 0.1 to 30.</summary>
        public double Fps;
        /// <summary>The widest picture wanted.</summary>
        public int MaxWidth;
        /// <summary>The image types the controller takes, in its order of preference.</summary>
        public List<string> Formats = new List<string>();

        /// <summary>
        /// The type to send: the first of Formats the game can encode (the
        /// controller lists JPEG first: small), or null when none.
        /// </summary>
        public string ChooseMime(Func<string, bool> canEncode)
        {
            foreach (var f in Formats)
                if ((f == Wire.MimeJpeg || f == Wire.MimePng) && canEncode(f)) return f;
            return null;
        }
    }

    static class Fmt
    {
        public static string Num(double d)
        {
            return d.ToString("R", CultureInfo.InvariantCulture);
        }
    }
}
