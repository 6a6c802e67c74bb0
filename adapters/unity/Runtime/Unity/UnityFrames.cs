using System;
using System.Threading;
using UnityEngine;
using UnityEngine.Experimental.Rendering;
using UnityEngine.Rendering;

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// The game's pictures: the screen at the end of the frame
    /// (ScreenCapture into a RenderTexture), scaled on the GPU to the asked
    /// width, read back without stalling the frame (AsyncGPUReadback, where
    /// the platform has it; ReadPixels otherwise), and encoded as JPEG or
    /// PNG off the main thread (ImageConversion.EncodeArrayToJPG/PNG). The
    /// core checks each picture against the protocol's limits.
    /// </summary>
    public sealed class UnityFrames : IFrameSource
    {
        /// <summary>The frame source, or null when the player does not render (-nographics).</summary>
        public static IFrameSource Create()
        {
            return SystemInfo.graphicsDeviceType == GraphicsDeviceType.Null ? null : new UnityFrames();
        }

        /// <inheritdoc/>
        public bool Available { get { return SystemInfo.graphicsDeviceType != GraphicsDeviceType.Null; } }
        /// <inheritdoc/>
        public int ScreenWidth { get { return Screen.width; } }
        /// <inheritdoc/>
        public int ScreenHeight { get { return Screen.height; } }
        /// <inheritdoc/>
        public int MaxInFlight { get { return 3; } }
        /// <inheritdoc/>
        public bool CanEncode(string mime) { return mime == Wire.MimeJpeg || mime == Wire.MimePng; }

        /// <inheritdoc/>
        public void Capture(int maxWidth, string mime, int quality, Action<EncodedPicture> done)
        {
            int w = Screen.width, h = Screen.height;
            int ow = Math.Max(1, Math.Min(maxWidth, w));
            int oh = Math.Max(1, (int)Math.Round((double)h * ow / w));
            var grab = RenderTexture.GetTemporary(w, h, 0);
            ScreenCapture.CaptureScreenshotIntoRenderTexture(grab);
            var small = RenderTexture.GetTemporary(ow, oh, 0);
            // Where textures start at the top, the screen's copy comes upside down.
            if (SystemInfo.graphicsUVStartsAtTop) Graphics.Blit(grab, small, new Vector2(1, -1), new Vector2(0, 1));
            else Graphics.Blit(grab, small, new Vector2(1, 1), new Vector2(0, 0));
            RenderTexture.ReleaseTemporary(grab);
            if (SystemInfo.supportsAsyncGPUReadback)
            {
                AsyncGPUReadback.Request(small, 0, TextureFormat.RGBA32, delegate (AsyncGPUReadbackRequest req)
                {
                    RenderTexture.ReleaseTemporary(small);
                    if (req.hasError) { done(null); return; }
                    byte[] pixels = req.GetData<byte>().ToArray();
                    ThreadPool.QueueUserWorkItem(delegate { done(Encode(pixels, ow, oh, mime, quality)); });
                });
                return;
            }
            var previous = RenderTexture.active;
            RenderTexture.active = small;
            var tex = new Texture2D(ow, oh, TextureFormat.RGBA32, false);
            tex.ReadPixels(new Rect(0, 0, ow, oh), 0, 0);
            tex.Apply();
            RenderTexture.active = previous;
            RenderTexture.ReleaseTemporary(small);
            byte[] data = tex.GetRawTextureData();
            UnityEngine.Object.Destroy(tex);
            ThreadPool.QueueUserWorkItem(delegate { done(Encode(data, ow, oh, mime, quality)); });
        }

        static EncodedPicture Encode(byte[] rgba, int w, int h, string mime, int quality)
        {
            try
            {
                byte[] file = mime == Wire.MimeJpeg
                    ? ImageConversion.EncodeArrayToJPG(rgba, GraphicsFormat.R8G8B8A8_SRGB, (uint)w, (uint)h, 0, quality)
                    : ImageConversion.EncodeArrayToPNG(rgba, GraphicsFormat.R8G8B8A8_SRGB, (uint)w, (uint)h, 0);
                return new EncodedPicture { Data = file, Mime = mime, Width = w, Height = h };
            }
            catch (Exception e)
            {
                Debug.LogWarning("Cappy: encoding a picture: " + e.Message);
                return null;
            }
        }
    }
}
