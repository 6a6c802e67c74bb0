using System;

namespace Crosscode.Cappy
{
    /// <summary>
    /// The rate of an operation's frames on its presented clock: a frame
    /// is due at each 1/fps of presented time from the operation's start
    /// (slots a game skipped are not made up); a frame with a reason takes its slot when
    /// free, else it is an extra, allowed fps times a second, one at a time.
    /// The controller keeps frames within twice the asked rate; so does this.
    /// </summary>
    public sealed class FramePacer
    {
        readonly double fps;
        long usedSlot = -1;
        double tokens = 1, tokensT;

        /// <summary>A pacer for fps frames a second.</summary>
        public FramePacer(double fps) { this.fps = fps; }

        long Slot(double t)
        {
            return (long)Math.Floor(t * fps / 1000 + 1e-9);
        }

        /// <summary>Whether a frame is due at presented time t (its slot has none yet).</summary>
        public bool Due(double t)
        {
            return Slot(t) > usedSlot;
        }

        /// <summary>Counts a frame taken at t (due, or with a reason).</summary>
        public void Took(double t)
        {
            long s = Slot(t);
            if (s > usedSlot) usedSlot = s;
        }

        /// <summary>Whether an extra frame (with a reason) may go at t; takes it when so.</summary>
        public bool Extra(double t)
        {
            if (Due(t)) { Took(t); return true; }
            tokens = Math.Min(1, tokens + (t - tokensT) / 1000 * fps);
            tokensT = t;
            if (tokens < 1) return false;
            tokens -= 1;
            return true;
        }
    }

    /// <summary>Checks a picture as the controller will (magic bytes, dimensions, size).</summary>
    public static class PictureCheck
    {
        /// <summary>Why pic cannot be sent as a frame of at most maxWidth in mime, or null.</summary>
        public static string Why(EncodedPicture pic, string mime, int maxWidth)
        {
            if (pic == null || pic.Data == null || pic.Data.Length == 0) return "no picture";
            if (pic.Mime != mime) return "the picture is " + pic.Mime + ", " + mime + " was asked";
            if (pic.Data.Length > Wire.MaxFrameBytes) return "the picture is " + pic.Data.Length + " bytes, over the 1 MiB a frame may have";
            int w, h;
            if (!Size(pic.Data, mime, out w, out h)) return "the picture's bytes are not a " + mime;
            if (w != pic.Width || h != pic.Height) return "the picture is " + w + "x" + h + ", not the " + pic.Width + "x" + pic.Height + " it says";
            if (w < 1 || h < 1 || w > Wire.MaxFrameSide || h > Wire.MaxFrameSide) return "the picture is " + w + "x" + h + ", outside 1 to 4096 pixels a side";
            if (w > maxWidth) return "the picture is " + w + " wide, more than the " + maxWidth + " asked";
            return null;
        }

        /// <summary>The size an image file's header states.</summary>
        public static bool Size(byte[] d, string mime, out int w, out int h)
        {
            w = h = 0;
            if (mime == Wire.MimePng)
            {
                if (d.Length < 24 || d[0] != 0x89 || d[1] != 'P' || d[2] != 'N' || d[3] != 'G' || d[12] != 'I' || d[13] != 'H' || d[14] != 'D' || d[15] != 'R') return false;
                w = (d[16] << 24) | (d[17] << 16) | (d[18] << 8) | d[19];
                h = (d[20] << 24) | (d[21] << 16) | (d[22] << 8) | d[23];
                return true;
            }
            if (mime != Wire.MimeJpeg || d.Length < 4 || d[0] != 0xFF || d[1] != 0xD8) return false;
            int i = 2;
            while (i + 9 < d.Length)
            {
                if (d[i] != 0xFF) return false;
                byte m = d[i + 1];
                if (m == 0xFF) { i++; continue; }
                int len = (d[i + 2] << 8) | d[i + 3];
                bool sof = m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
                if (sof)
                {
                    h = (d[i + 5] << 8) | d[i + 6];
                    w = (d[i + 7] << 8) | d[i + 8];
                    return true;
                }
                if (m == 0xD9 || m == 0xDA) return false;
                i += 2 + len;
            }
            return false;
        }
    }
}
