using System;
using System.IO;

namespace Arena
{
    // The arena's software renderer and its PNG encoder: the picture is
    // drawn in a palette of a few colours, one byte a pixel, and written as
    // an indexed PNG whose zlib stream is run-length deflate (each run of a
    // colour as one literal and copies of distance 1, in deflate's fixed
    // Huffman codes): flat pictures are small, and quick to draw and encode.

    public static class Render
    {
        public const int W = 640, H = 360;

        // The palette's colours, by index.
        const byte Floor = 0, Wall = 2, Coin = 3, Slime = 4, Golem = 5, HpBack = 6, Hurt = 7,
            Hero = 8, HeroDown = 9, White = 10, HeroHp = 11, WaveMark = 12;
        /// <summary>The palette's colours (0xRRGGBB), by index.</summary>
        public static readonly int[] Rgb = {
            0x1d2330, 0x262d3d, 0x6b7280, 0xf2c94c, 0x5fd35f, 0xc0683f, 0x3a3a3a, 0xe05252,
            0x7aa7ff, 0x555555, 0xffffff, 0x4ade80, 0xa78bfa,
        };

        // The floor and the walls, drawn once; the walls are 8 pixels, on
        // the 8x8 blocks a JPEG encodes, so that only what moves costs.
        static readonly byte[] Background = MakeBackground();

        static byte[] MakeBackground()
        {
            var px = new byte[W * H];
            Fill(px, 0, 0, W, 8, Wall); Fill(px, 0, H - 8, W, 8, Wall);
            Fill(px, 0, 0, 8, H, Wall); Fill(px, W - 8, 0, 8, H, Wall);
            return px;
        }

        /// <summary>The 8x8 blocks across and down.</summary>
        public const int BlocksW = W / 8, BlocksH = H / 8;

        /// <summary>
        /// Each 8x8 block's one colour, or -1 when something was drawn on it:
        /// set by the last Draw on this thread, for the JPEG encoder.
        /// </summary>
        [ThreadStatic] static int[] blocks;

        static readonly int[] BackgroundBlocks = MakeBackgroundBlocks();

        static int[] MakeBackgroundBlocks()
        {
            var b = new int[BlocksW * BlocksH];
            for (int by = 0; by < BlocksH; by++)
                for (int bx = 0; bx < BlocksW; bx++)
                    b[by * BlocksW + bx] = Background[by * 8 * W + bx * 8];
            return b;
        }

        /// <summary>The world drawn as palette indices (W*H), top row first; blockColours gets each 8x8 block's one colour or -1.</summary>
        public static byte[] Draw(World w, out int[] blockColours)
        {
            var px = (byte[])Background.Clone();
            blocks = (int[])BackgroundBlocks.Clone();
            foreach (var c in w.Coins.Kids)
            {
                var b = c.Get<Body>();
                Disc(px, b.x, b.y, b.radius, Coin);
            }
            foreach (var f in w.Foes.Kids)
            {
                var b = f.Get<Body>();
                var h = f.Get<Health>();
                Disc(px, b.x, b.y, b.radius, f.Get<Brain>().kind == "golem" ? Golem : Slime);
                Bar(px, b.x - b.radius, b.y - b.radius - 6, 2 * b.radius, h.hp, h.max, Hurt);
            }
            var hb = w.Hero.Get<Body>();
            var hh = w.Hero.Get<Health>();
            Disc(px, hb.x, hb.y, hb.radius, hh.hp > 0 ? Hero : HeroDown);
            Disc(px, hb.x, hb.y, hb.radius / 3, White);
            // The hero's hit points, the coins and the waves, at the top.
            Bar(px, 12, 12, 160, hh.hp, hh.max, HeroHp);
            int coins = w.Hero.Get<Purse>().coins;
            for (int i = 0; i < Math.Min(coins, 20); i++) Disc(px, 190 + i * 12, 17, 4, Coin);
            for (int i = 0; i < Math.Min(w.State.wave, 20); i++) Fill(px, W - 20 - i * 10, 12, 6, 10, WaveMark);
            blockColours = blocks;
            blocks = null;
            return px;
        }

        /// <summary>Turns the floor red (a planted visual change).</summary>
        public static void Tint(byte[] px, int[] blockColours)
        {
            for (int i = 0; i < px.Length; i++) if (px[i] == Floor) px[i] = Hurt;
            for (int i = 0; i < blockColours.Length; i++) if (blockColours[i] == Floor) blockColours[i] = Hurt;
        }

        static void Fill(byte[] px, int x0, int y0, int w, int h, byte c)
        {
            int x1 = Math.Min(W, x0 + w), y1 = Math.Min(H, y0 + h);
            x0 = Math.Max(0, x0); y0 = Math.Max(0, y0);
            if (x1 <= x0 || y1 <= y0) return;
            if (blocks != null)
                for (int by = y0 >> 3; by <= (y1 - 1) >> 3; by++)
                    for (int bx = x0 >> 3; bx <= (x1 - 1) >> 3; bx++)
                        blocks[by * BlocksW + bx] = -1;
            for (int y = y0; y < y1; y++)
                for (int i = y * W + x0, end = y * W + x1; i < end; i++) px[i] = c;
        }

        static void Disc(byte[] px, double cx, double cy, double r, byte c)
        {
            int y0 = (int)Math.Floor(cy - r), y1 = (int)Math.Ceiling(cy + r);
            for (int y = y0; y <= y1; y++)
            {
                double dy = y + 0.5 - cy;
                double half = r * r - dy * dy;
                if (half < 0) continue;
                double s = Math.Sqrt(half);
                int x0 = (int)Math.Round(cx - s), x1 = (int)Math.Round(cx + s);
                Fill(px, x0, y, x1 - x0, 1, c);
            }
        }

        static void Bar(byte[] px, double x, double y, double w, int v, int max, byte c)
        {
            Fill(px, (int)x, (int)y, (int)w, 4, HpBack);
            if (max > 0) Fill(px, (int)x, (int)y, (int)(w * v / max), 4, c);
        }

        /// <summary>Palette pixels scaled down to at most width (nearest).</summary>
        public static byte[] Scale(byte[] px, int width, out int outW, out int outH)
        {
            outW = Math.Min(W, Math.Max(1, width));
            outH = Math.Max(1, (int)Math.Round((double)H * outW / W));
            if (outW == W) return px;
            var o = new byte[outW * outH];
            for (int y = 0; y < outH; y++)
            {
                int sy = y * H / outH * W;
                for (int x = 0; x < outW; x++) o[y * outW + x] = px[sy + x * W / outW];
            }
            return o;
        }

        /// <summary>Palette pixels (w*h) as PNG bytes.</summary>
        public static byte[] Png(byte[] px, int outW, int outH)
        {
            var raw = new byte[(outW + 1) * outH]; // each row: filter 0 (none), then its indices
            for (int y = 0; y < outH; y++) Buffer.BlockCopy(px, y * outW, raw, y * (outW + 1) + 1, outW);
            byte[] z = Zlib(raw);

            var png = new MemoryStream(z.Length + 128);
            png.Write(new byte[] { 0x89, (byte)'P', (byte)'N', (byte)'G', 0x0D, 0x0A, 0x1A, 0x0A }, 0, 8);
            var ihdr = new byte[13];
            Be(ihdr, 0, (uint)outW); Be(ihdr, 4, (uint)outH);
            ihdr[8] = 8; ihdr[9] = 3; // 8 bits, indexed
            Chunk(png, "IHDR", ihdr);
            var plte = new byte[Rgb.Length * 3];
            for (int i = 0; i < Rgb.Length; i++) { plte[3 * i] = (byte)(Rgb[i] >> 16); plte[3 * i + 1] = (byte)(Rgb[i] >> 8); plte[3 * i + 2] = (byte)Rgb[i]; }
            Chunk(png, "PLTE", plte);
            Chunk(png, "IDAT", z);
            Chunk(png, "IEND", new byte[0]);
            return png.ToArray();
        }

        static void Chunk(Stream s, string type, byte[] data)
        {
            var len = new byte[4];
            Be(len, 0, (uint)data.Length);
            s.Write(len, 0, 4);
            var head = new byte[4 + data.Length];
            for (int i = 0; i < 4; i++) head[i] = (byte)type[i];
            Buffer.BlockCopy(data, 0, head, 4, data.Length);
            s.Write(head, 0, head.Length);
            var crc = new byte[4];
            Be(crc, 0, Crc32(head));
            s.Write(crc, 0, 4);
        }

        static void Be(byte[] b, int o, uint v)
        {
            b[o] = (byte)(v >> 24); b[o + 1] = (byte)(v >> 16); b[o + 2] = (byte)(v >> 8); b[o + 3] = (byte)v;
        }

        static readonly uint[] CrcTable = MakeCrcTable();

        static uint[] MakeCrcTable()
        {
            var t = new uint[256];
            for (uint n = 0; n < 256; n++)
            {
                uint c = n;
                for (int k = 0; k < 8; k++) c = (c & 1) != 0 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
                t[n] = c;
            }
            return t;
        }

        static uint Crc32(byte[] b)
        {
            uint c = 0xFFFFFFFFu;
            foreach (var x in b) c = CrcTable[(c ^ x) & 0xFF] ^ (c >> 8);
            return c ^ 0xFFFFFFFFu;
        }

        // zlib of data: one fixed-Huffman deflate block of runs (a literal,
        // then copies of the byte before it), and the Adler-32 of data,
        // computed a run at a time.
        static byte[] Zlib(byte[] data)
        {
            var w = new BitWriter(data.Length / 4 + 64);
            w.Bits(0x78, 8); w.Bits(0x01, 8);
            w.Bits(1, 1); // the last block
            w.Bits(1, 2); // fixed Huffman codes
            ulong a = 1, s = 0;
            int n = data.Length;
            for (int i = 0; i < n;)
            {
                byte b = data[i];
                int j = i + 1;
                while (j < n && data[j] == b) j++;
                int run = j - i;
                i = j;
                // Adler-32 over the run: a += b each byte, s += a each byte.
                s = (s + (ulong)run * a + (ulong)b * (ulong)run * (ulong)(run + 1) / 2) % 65521;
                a = (a + (ulong)b * (ulong)run) % 65521;
                w.Bits(Codes[b], CodeBits[b]);
                int left = run - 1;
                while (left >= 3)
                {
                    int m = left < 258 ? left : 258;
                    if (left - m > 0 && left - m < 3) m -= 3; // leave a copy of 3 or more
                    int sym = LengthSymbol[m];
                    w.Bits(Codes[sym], CodeBits[sym]);
                    int extra = LengthExtra[sym - 257];
                    if (extra > 0) w.Bits((uint)(m - LengthBase[sym - 257]), extra);
                    w.Bits(0, 5); // distance 1: code 0, no extra bits
                    left -= m;
                }
                for (; left > 0; left--) w.Bits(Codes[b], CodeBits[b]);
            }
            w.Bits(Codes[256], CodeBits[256]); // the end of the block
            w.Align();
            uint adler = (uint)((s << 16) | a);
            w.Bits(adler >> 24, 8); w.Bits((adler >> 16) & 0xFF, 8); w.Bits((adler >> 8) & 0xFF, 8); w.Bits(adler & 0xFF, 8);
            return w.ToArray();
        }

        static readonly int[] LengthBase = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
        static readonly int[] LengthExtra = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };

        // The symbol of each copy length, 3 to 258.
        static readonly int[] LengthSymbol = MakeLengthSymbols();

        static int[] MakeLengthSymbols()
        {
            var t = new int[259];
            for (int len = 3; len <= 258; len++)
            {
                int k = LengthBase.Length - 1;
                while (LengthBase[k] > len) k--;
                t[len] = 257 + k;
            }
            return t;
        }

        // Deflate's fixed Huffman code of each literal/length symbol, its
        // bits reversed (codes go most significant bit first).
        static readonly uint[] Codes = new uint[288];
        static readonly int[] CodeBits = new int[288];

        static Render()
        {
            for (int sym = 0; sym < 288; sym++)
            {
                int code, n;
                if (sym < 144) { code = 0x30 + sym; n = 8; }
                else if (sym < 256) { code = 0x190 + sym - 144; n = 9; }
                else if (sym < 280) { code = sym - 256; n = 7; }
                else { code = 0xC0 + sym - 280; n = 8; }
                uint rev = 0;
                for (int i = 0; i < n; i++) rev |= (uint)((code >> i) & 1) << (n - 1 - i);
                Codes[sym] = rev;
                CodeBits[sym] = n;
            }
        }

        sealed class BitWriter
        {
            byte[] buf;
            int len;
            ulong acc;
            int count;
            public BitWriter(int capacity) { buf = new byte[capacity]; }

            // Appends the low n bits of v (n at most 32), least significant first.
            public void Bits(uint v, int n)
            {
                acc |= (ulong)(v & (uint)((1UL << n) - 1)) << count;
                count += n;
                if (count < 32) return;
                if (len + 8 > buf.Length) Array.Resize(ref buf, buf.Length * 2);
                while (count >= 8)
                {
                    buf[len++] = (byte)acc;
                    acc >>= 8;
                    count -= 8;
                }
            }

            public void Align()
            {
                if ((count & 7) != 0) Bits(0, 8 - (count & 7));
                if (len + 8 > buf.Length) Array.Resize(ref buf, buf.Length + 16);
                while (count >= 8)
                {
                    buf[len++] = (byte)acc;
                    acc >>= 8;
                    count -= 8;
                }
            }

            public byte[] ToArray()
            {
                Align();
                var o = new byte[len];
                Buffer.BlockCopy(buf, 0, o, 0, len);
                return o;
            }
        }
    }
}
