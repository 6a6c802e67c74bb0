using System;
using System.IO;
using System.IO.Compression;

namespace Arena
{
    // The arena's software renderer and its PNG encoder (zlib from
    // System.IO.Compression's DeflateStream, CRC-32 and Adler-32 here).

    public static class Render
    {
        public const int W = 640, H = 360;

        /// <summary>The world drawn into RGB bytes (W*H*3), top row first.</summary>
        public static byte[] Draw(World w)
        {
            var px = new byte[W * H * 3];
            Fill(px, 0, 0, W, H, 0x1d2330);
            // The walls and the floor's grid.
            for (int x = 0; x < W; x += 40) Fill(px, x, 0, 1, H, 0x262d3d);
            for (int y = 0; y < H; y += 40) Fill(px, 0, y, W, 1, 0x262d3d);
            Fill(px, 0, 0, W, 4, 0x6b7280); Fill(px, 0, H - 4, W, 4, 0x6b7280);
            Fill(px, 0, 0, 4, H, 0x6b7280); Fill(px, W - 4, 0, 4, H, 0x6b7280);
            foreach (var c in w.Coins.Kids)
            {
                var b = c.Get<Body>();
                Disc(px, b.x, b.y, b.radius, 0xf2c94c);
            }
            foreach (var f in w.Foes.Kids)
            {
                var b = f.Get<Body>();
                var h = f.Get<Health>();
                bool golem = f.Get<Brain>().kind == "golem";
                Disc(px, b.x, b.y, b.radius, golem ? 0xc0683f : 0x5fd35f);
                Bar(px, b.x - b.radius, b.y - b.radius - 6, 2 * b.radius, h.hp, h.max, 0xe05252);
            }
            var hb = w.Hero.Get<Body>();
            var hh = w.Hero.Get<Health>();
            Disc(px, hb.x, hb.y, hb.radius, hh.hp > 0 ? 0x7aa7ff : 0x555555);
            Disc(px, hb.x, hb.y, hb.radius / 3, 0xffffff);
            // The hero's hit points and the coins, top left.
            Bar(px, 12, 12, 160, hh.hp, hh.max, 0x4ade80);
            int coins = w.Hero.Get<Purse>().coins;
            for (int i = 0; i < Math.Min(coins, 20); i++) Disc(px, 190 + i * 12, 17, 4, 0xf2c94c);
            for (int i = 0; i < Math.Min(w.State.wave, 20); i++) Fill(px, W - 20 - i * 10, 12, 6, 10, 0xa78bfa);
            return px;
        }

        static void Fill(byte[] px, int x0, int y0, int w, int h, int rgb)
        {
            int x1 = Math.Min(W, x0 + w), y1 = Math.Min(H, y0 + h);
            x0 = Math.Max(0, x0); y0 = Math.Max(0, y0);
            byte r = (byte)(rgb >> 16), g = (byte)(rgb >> 8), b = (byte)rgb;
            for (int y = y0; y < y1; y++)
                for (int x = x0, i = (y * W + x0) * 3; x < x1; x++, i += 3) { px[i] = r; px[i + 1] = g; px[i + 2] = b; }
        }

        static void Disc(byte[] px, double cx, double cy, double r, int rgb)
        {
            int y0 = (int)Math.Floor(cy - r), y1 = (int)Math.Ceiling(cy + r);
            for (int y = y0; y <= y1; y++)
            {
                double dy = y + 0.5 - cy;
                double half = r * r - dy * dy;
                if (half < 0) continue;
                double s = Math.Sqrt(half);
                int x0 = (int)Math.Round(cx - s), x1 = (int)Math.Round(cx + s);
                Fill(px, x0, y, x1 - x0, 1, rgb);
            }
        }

        static void Bar(byte[] px, double x, double y, double w, int v, int max, int rgb)
        {
            Fill(px, (int)x, (int)y, (int)w, 4, 0x3a3a3a);
            if (max > 0) Fill(px, (int)x, (int)y, (int)(w * v / max), 4, rgb);
        }

        /// <summary>RGB pixels scaled down to width (nearest), as PNG bytes.</summary>
        public static byte[] Png(byte[] rgb, int width, out int outW, out int outH)
        {
            outW = Math.Min(W, Math.Max(1, width));
            outH = Math.Max(1, (int)Math.Round((double)H * outW / W));
            int stride = outW * 3;
            var raw = new byte[(stride + 1) * outH];
            for (int y = 0; y < outH; y++)
            {
                int sy = y * H / outH;
                int o = y * (stride + 1);
                raw[o] = 1; // filter Sub: flat colours compress to almost nothing
                for (int x = 0; x < outW; x++)
                {
                    int sx = x * W / outW;
                    int si = (sy * W + sx) * 3, di = o + 1 + x * 3;
                    raw[di] = rgb[si]; raw[di + 1] = rgb[si + 1]; raw[di + 2] = rgb[si + 2];
                }
                for (int i = o + stride; i > o + 3; i--) raw[i] = (byte)(raw[i] - raw[i - 3]);
            }
            var z = new MemoryStream();
            z.WriteByte(0x78); z.WriteByte(0x01);
            using (var d = new DeflateStream(z, CompressionLevel.Fastest, true)) d.Write(raw, 0, raw.Length);
            uint adler = Adler32(raw);
            z.WriteByte((byte)(adler >> 24)); z.WriteByte((byte)(adler >> 16)); z.WriteByte((byte)(adler >> 8)); z.WriteByte((byte)adler);

            var png = new MemoryStream();
            png.Write(new byte[] { 0x89, (byte)'P', (byte)'N', (byte)'G', 0x0D, 0x0A, 0x1A, 0x0A }, 0, 8);
            var ihdr = new byte[13];
            Be(ihdr, 0, (uint)outW); Be(ihdr, 4, (uint)outH);
            ihdr[8] = 8; ihdr[9] = 2; // 8 bits, RGB
            Chunk(png, "IHDR", ihdr);
            Chunk(png, "IDAT", z.ToArray());
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

        static uint Adler32(byte[] b)
        {
            uint a = 1, s = 0;
            for (int i = 0; i < b.Length; i++) { a = (a + b[i]) % 65521; s = (s + a) % 65521; }
            return (s << 16) | a;
        }
    }
}
