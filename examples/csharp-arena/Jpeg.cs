using System;

namespace Arena
{
    // A baseline JPEG encoder for the arena's palette pictures (4:2:0, the
    // standard Huffman tables, the IJG quality scaling). A block of one
    // colour, which most of a flat picture is, costs only its DC term; the
    // rest goes through a separable DCT. JPEG is what the controller hands
    // an agent as is, and what Unity's ImageConversion gives the package.
    public static class Jpeg
    {
        static readonly byte[] LumaQ = {
            16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
            18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99 };
        static readonly byte[] ChromaQ = {
            17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
            99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99, 99 };
        static readonly byte[] Zigzag = {
            0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
            35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63 };

        // The standard Huffman tables (ITU T.81, Annex K): code counts by length, then values.
        static readonly byte[] DcLumaBits = { 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0 };
        static readonly byte[] DcLumaVals = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
        static readonly byte[] DcChromaBits = { 0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0 };
        static readonly byte[] DcChromaVals = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
        static readonly byte[] AcLumaBits = { 0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d };
        static readonly byte[] AcLumaVals = {
            0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08,
            0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28,
            0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59,
            0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
            0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6,
            0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2,
            0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa };
        static readonly byte[] AcChromaBits = { 0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77 };
        static readonly byte[] AcChromaVals = {
            0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91,
            0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26,
            0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58,
            0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
            0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4,
            0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda,
            0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa };

        sealed class Huff
        {
            public readonly ushort[] Code = new ushort[256];
            public readonly byte[] Size = new byte[256];
            public Huff(byte[] bits, byte[] vals)
            {
                int code = 0, k = 0;
                for (int len = 1; len <= 16; len++)
                {
                    for (int i = 0; i < bits[len - 1]; i++, k++)
                    {
                        Code[vals[k]] = (ushort)code;
                        Size[vals[k]] = (byte)len;
                        code++;
                    }
                    code <<= 1;
                }
            }
        }

        static readonly Huff DcLuma = new Huff(DcLumaBits, DcLumaVals), DcChroma = new Huff(DcChromaBits, DcChromaVals);
        static readonly Huff AcLuma = new Huff(AcLumaBits, AcLumaVals), AcChroma = new Huff(AcChromaBits, AcChromaVals);

        // cos((2x+1) u pi / 16), by [u, x].
        static readonly float[] Cos = MakeCos();

        static float[] MakeCos()
        {
            var c = new float[64];
            for (int u = 0; u < 8; u++)
                for (int x = 0; x < 8; x++)
                    c[u * 8 + x] = (float)Math.Cos((2 * x + 1) * u * Math.PI / 16);
            return c;
        }

        /// <summary>
        /// Encodes a picture of palette indices (w*h, top row first) whose
        /// colours are rgb (0xRRGGBB), at quality 1 to 100. blocks, when
        /// given, holds each 8x8 block's one colour (-1: look at it).
        /// </summary>
        public static byte[] Encode(byte[] idx, int w, int h, int[] rgb, int quality, int[] blocks = null)
        {
            quality = Math.Max(1, Math.Min(100, quality));
            int scale = quality < 50 ? 5000 / quality : 200 - quality * 2;
            var qy = new int[64];
            var qc = new int[64];
            for (int i = 0; i < 64; i++)
            {
                qy[i] = Math.Max(1, Math.Min(255, (LumaQ[i] * scale + 50) / 100));
                qc[i] = Math.Max(1, Math.Min(255, (ChromaQ[i] * scale + 50) / 100));
            }
            // Each palette colour in YCbCr, less 128.
            var py = new float[rgb.Length];
            var pcb = new float[rgb.Length];
            var pcr = new float[rgb.Length];
            for (int i = 0; i < rgb.Length; i++)
            {
                float r = (rgb[i] >> 16) & 255, g = (rgb[i] >> 8) & 255, b = rgb[i] & 255;
                py[i] = 0.299f * r + 0.587f * g + 0.114f * b - 128;
                pcb[i] = -0.168736f * r - 0.331264f * g + 0.5f * b;
                pcr[i] = 0.5f * r - 0.418688f * g - 0.081312f * b;
            }

            var o = new Writer(w * h / 8 + 1024);
            o.Marker(0xD8);
            Dqt(o, 0, qy);
            Dqt(o, 1, qc);
            o.Marker(0xC0);
            o.Word(17); o.Byte(8); o.Word(h); o.Word(w); o.Byte(3);
            o.Byte(1); o.Byte(0x22); o.Byte(0);
            o.Byte(2); o.Byte(0x11); o.Byte(1);
            o.Byte(3); o.Byte(0x11); o.Byte(1);
            Dht(o, 0x00, DcLumaBits, DcLumaVals);
            Dht(o, 0x10, AcLumaBits, AcLumaVals);
            Dht(o, 0x01, DcChromaBits, DcChromaVals);
            Dht(o, 0x11, AcChromaBits, AcChromaVals);
            o.Marker(0xDA);
            o.Word(12); o.Byte(3);
            o.Byte(1); o.Byte(0x00);
            o.Byte(2); o.Byte(0x11);
            o.Byte(3); o.Byte(0x11);
            o.Byte(0); o.Byte(63); o.Byte(0);

            var block = new float[64];
            var t = new float[64];
            var coef = new int[64];
            int dcY = 0, dcCb = 0, dcCr = 0;
            for (int my = 0; my < h; my += 16)
                for (int mx = 0; mx < w; mx += 16)
                {
                    // Luma: four blocks; a block of one colour is its DC term alone.
                    int same = -1; // the one colour of all four, or -2
                    for (int b = 0; b < 4; b++)
                    {
                        int bx = mx + (b & 1) * 8, by = my + (b >> 1) * 8;
                        int c = bx < w && by < h && blocks != null ? blocks[(by >> 3) * ((w + 7) >> 3) + (bx >> 3)] : -1;
                        if (c < 0) c = OneColour(idx, w, h, bx, by);
                        same = b == 0 ? c : (c == same ? same : -2);
                        if (c >= 0) { dcY = Uniform(o, py[c], qy, dcY, DcLuma, AcLuma); continue; }
                        for (int y = 0; y < 8; y++)
                        {
                            int sy = Math.Min(by + y, h - 1) * w;
                            for (int x = 0; x < 8; x++) block[y * 8 + x] = py[idx[sy + Math.Min(bx + x, w - 1)]];
                        }
                        dcY = Transform(o, block, t, coef, qy, dcY, DcLuma, AcLuma);
                    }
                    // Chroma: each sample the mean of 2x2 pixels.
                    dcCb = Chroma(o, idx, w, h, mx, my, same, pcb, qc, dcCb, block, t, coef);
                    dcCr = Chroma(o, idx, w, h, mx, my, same, pcr, qc, dcCr, block, t, coef);
                }
            o.Flush();
            o.Marker(0xD9);
            return o.ToArray();
        }

        // The palette index of the 8x8 block at bx, by (edges replicated),
        // or -1 when it has more than one.
        static int OneColour(byte[] idx, int w, int h, int bx, int by)
        {
            int first = idx[Math.Min(by, h - 1) * w + Math.Min(bx, w - 1)];
            if (bx + 8 <= w && by + 8 <= h)
            {
                for (int y = by; y < by + 8; y++)
                    for (int i = y * w + bx, end = i + 8; i < end; i++)
                        if (idx[i] != first) return -1;
                return first;
            }
            for (int y = 0; y < 8; y++)
            {
                int sy = Math.Min(by + y, h - 1) * w;
                for (int x = 0; x < 8; x++)
                    if (idx[sy + Math.Min(bx + x, w - 1)] != first) return -1;
            }
            return first;
        }

        static int Chroma(Writer o, byte[] idx, int w, int h, int mx, int my, int same, float[] pal, int[] q, int dc, float[] block, float[] t, int[] coef)
        {
            if (same >= 0) return Uniform(o, pal[same], q, dc, DcChroma, AcChroma);
            for (int y = 0; y < 8; y++)
            {
                int y0 = Math.Min(my + 2 * y, h - 1) * w, y1 = Math.Min(my + 2 * y + 1, h - 1) * w;
                for (int x = 0; x < 8; x++)
                {
                    int x0 = Math.Min(mx + 2 * x, w - 1), x1 = Math.Min(mx + 2 * x + 1, w - 1);
                    block[y * 8 + x] = (pal[idx[y0 + x0]] + pal[idx[y0 + x1]] + pal[idx[y1 + x0]] + pal[idx[y1 + x1]]) / 4;
                }
            }
            return Transform(o, block, t, coef, q, dc, DcChroma, AcChroma);
        }

        static int Uniform(Writer o, float v, int[] q, int dc, Huff dcH, Huff acH)
        {
            int d = (int)Math.Round(8 * v / q[0]);
            Dc(o, d - dc, dcH);
            o.Bits(acH.Code[0x00], acH.Size[0x00]); // end of block
            return d;
        }

        static int Transform(Writer o, float[] s, float[] t, int[] coef, int[] q, int dc, Huff dcH, Huff acH)
        {
            // Rows, then columns: F(u,v) = 1/4 C(u) C(v) sum s(x,y) cos cos.
            for (int y = 0; y < 8; y++)
                for (int u = 0; u < 8; u++)
                {
                    float sum = 0;
                    for (int x = 0; x < 8; x++) sum += s[y * 8 + x] * Cos[u * 8 + x];
                    t[y * 8 + u] = sum * (u == 0 ? 0.70710678f : 1f);
                }
            for (int u = 0; u < 8; u++)
                for (int v = 0; v < 8; v++)
                {
                    float sum = 0;
                    for (int y = 0; y < 8; y++) sum += t[y * 8 + u] * Cos[v * 8 + y];
                    sum *= (v == 0 ? 0.70710678f : 1f) / 4;
                    int k = v * 8 + u;
                    coef[k] = (int)Math.Round(sum / q[k]);
                }
            Dc(o, coef[0] - dc, dcH);
            int run = 0;
            for (int i = 1; i < 64; i++)
            {
                int c = coef[Zigzag[i]];
                if (c == 0) { run++; continue; }
                while (run > 15) { o.Bits(acH.Code[0xF0], acH.Size[0xF0]); run -= 16; }
                int n = Magnitude(c);
                int sym = (run << 4) | n;
                o.Bits(acH.Code[sym], acH.Size[sym]);
                o.Bits(c < 0 ? c + (1 << n) - 1 : c, n);
                run = 0;
            }
            if (run > 0) o.Bits(acH.Code[0x00], acH.Size[0x00]);
            return coef[0];
        }

        static void Dc(Writer o, int diff, Huff h)
        {
            int n = Magnitude(diff);
            o.Bits(h.Code[n], h.Size[n]);
            if (n > 0) o.Bits(diff < 0 ? diff + (1 << n) - 1 : diff, n);
        }

        static int Magnitude(int v)
        {
            v = Math.Abs(v);
            int n = 0;
            while (v > 0) { n++; v >>= 1; }
            return n;
        }

        static void Dqt(Writer o, int id, int[] q)
        {
            o.Marker(0xDB);
            o.Word(67);
            o.Byte(id);
            for (int i = 0; i < 64; i++) o.Byte(q[Zigzag[i]]);
        }

        static void Dht(Writer o, int cls, byte[] bits, byte[] vals)
        {
            o.Marker(0xC4);
            o.Word(3 + 16 + vals.Length);
            o.Byte(cls);
            foreach (var b in bits) o.Byte(b);
            foreach (var v in vals) o.Byte(v);
        }

        // Bytes, and the entropy-coded bits (most significant first, 0xFF
        // followed by a stuffed 0x00).
        sealed class Writer
        {
            byte[] buf;
            int len;
            uint acc;
            int count;
            public Writer(int capacity) { buf = new byte[capacity]; }

            public void Byte(int b)
            {
                if (len == buf.Length) Array.Resize(ref buf, buf.Length * 2);
                buf[len++] = (byte)b;
            }

            public void Word(int v) { Byte(v >> 8); Byte(v & 0xFF); }
            public void Marker(int m) { Byte(0xFF); Byte(m); }

            public void Bits(int v, int n)
            {
                acc = (acc << n) | (uint)(v & ((1 << n) - 1));
                count += n;
                while (count >= 8)
                {
                    int b = (int)(acc >> (count - 8)) & 0xFF;
                    Byte(b);
                    if (b == 0xFF) Byte(0);
                    count -= 8;
                }
            }

            public void Flush()
            {
                if (count > 0) Bits((1 << (8 - count)) - 1, 8 - count); // pad with ones
            }

            public byte[] ToArray()
            {
                var o = new byte[len];
                Buffer.BlockCopy(buf, 0, o, 0, len);
                return o;
            }
        }
    }
}
