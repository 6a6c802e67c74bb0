using System;
using System.Collections.Generic;
using System.Globalization;
using System.Threading;
using NUnit.Framework;

namespace Crosscode.Cappy.Tests
{
    [TestFixture]
    public class JsonTests
    {
        [Test]
        public void ParsesWhatTheControllerSends()
        {
            var m = (JsonObject)Json.Parse("{\"type\":\"step\",\"op\":\"op_1\",\"actions\":[{\"name\":\"move\",\"x\":-0.5,\"y\":1e0}],\"ms\":500,\"ok\":true,\"none\":null}");
            Assert.AreEqual("step", m["type"]);
            Assert.AreEqual(500.0, m["ms"]);
            Assert.AreEqual(true, m["ok"]);
            Assert.IsTrue(m.ContainsKey("none"));
            Assert.IsNull(m["none"]);
            var a = (JsonObject)((List<object>)m["actions"])[0];
            Assert.AreEqual(-0.5, a["x"]);
            Assert.AreEqual(1.0, a["y"]);
            CollectionAssert.AreEqual(new[] { "type", "op", "actions", "ms", "ok", "none" }, m.Keys, "keys keep their order");
        }

        [Test]
        public void StringsAndEscapes()
        {
            Assert.AreEqual("a\"b\\c\n\t/é😀", Json.Parse("\"a\\\"b\\\\c\\n\\t\\/\\u00e9\\ud83d\\ude00\""));
            Assert.AreEqual("\"a\\\"b\\\\c\\n\\t\\u0001é😀\"", Json.Write("a\"b\\c\n\t\u0001é😀"));
            Assert.AreEqual("\"\\ufffd\"", Json.Write("\ud83d"), "a lone surrogate is replaced, so the text stays UTF-8");
            Assert.AreEqual("\"\\u2028\"", Json.Write("\u2028"));
        }

        [Test]
        public void NumbersAreInvariantWhateverTheCulture()
        {
            var was = Thread.CurrentThread.CurrentCulture;
            Thread.CurrentThread.CurrentCulture = new CultureInfo("de-DE"); // a decimal comma
            try
            {
                Assert.AreEqual("[0.5,1,-2,1e-7,123456789012,0.1,16.666666666666668,1e21]", Json.Write(new object[] { 0.5, 1.0, -2, 1e-7, 123456789012L, 0.1f, 1000.0 / 60, 1e21 }));
                Assert.AreEqual(0.25, Json.Parse("0.25"));
                Assert.AreEqual(9007199254740991.0, Json.Parse("9007199254740991"));
            }
            finally
            {
                Thread.CurrentThread.CurrentCulture = was;
            }
            Assert.Throws<ArgumentException>(() => Json.Write(double.NaN));
        }

        [TestCase("")]
        [TestCase("{")]
        [TestCase("{\"a\":1,}")]
        [TestCase("[1,]")]
        [TestCase("{\"a\":1}x")]
        [TestCase("{\"a\":1,\"a\":2}")]
        [TestCase("'a'")]
        [TestCase("01")]
        [TestCase("1.")]
        [TestCase("-")]
        [TestCase("\"\\x\"")]
        [TestCase("\"a\nb\"")]
        [TestCase("tru")]
        [TestCase("NaN")]
        [TestCase("1e999")]
        public void RefusesWhatIsNotJson(string text)
        {
            Assert.Throws<FormatException>(() => Json.Parse(text));
        }

        [Test]
        public void RefusesDeepNesting()
        {
            Assert.Throws<FormatException>(() => Json.Parse(new string('[', 100) + new string(']', 100)));
            Assert.DoesNotThrow(() => Json.Parse(new string('[', 60) + new string(']', 60)));
        }

        [Test]
        public void WritesObjectsListsAndRaw()
        {
            var o = new JsonObject();
            o["b"] = new List<object> { 1, "x", null, false };
            o["a"] = new Dictionary<string, object> { { "k", 2.5 } };
            o["r"] = new JsonRaw("{\"pre\":1}");
            Assert.AreEqual("{\"b\":[1,\"x\",null,false],\"a\":{\"k\":2.5},\"r\":{\"pre\":1}}", Json.Write(o));
            var back = (JsonObject)Json.Parse(Json.Write(o));
            Assert.AreEqual(2.5, ((JsonObject)back["a"])["k"]);
        }
    }
}
