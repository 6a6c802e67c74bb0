package visual

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"image/png"
	"iter"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoFFmpeg is returned by FindFFmpeg when ffmpeg is not on PATH; its
// message says how to install it.
var ErrNoFFmpeg = errors.New("ffmpeg not found on PATH: install it to get videos (Debian/Ubuntu: apt-get install ffmpeg; Fedora: dnf install ffmpeg; macOS: brew install ffmpeg) or give its path")

// FindFFmpeg returns the path of ffmpeg on PATH, or ErrNoFFmpeg.
func FindFFmpeg() (string, error) {
	p, err := exec.LookPath("ffmpeg")
	if err != nil {
		return "", ErrNoFFmpeg
	}
	return p, nil
}

// Defaults of videos.
const (
	// DefaultCRF is the x264 constant rate factor (lower is better quality).
	DefaultCRF = 23
	// DefaultPreset is the x264 preset.
	DefaultPreset = "veryfast"
	// MaxVideoWidth is the widest video made.
	MaxVideoWidth = 3840
	// keyframeEvery is the most seconds between keyframes, for seeking.
	keyframeEvery = 2
	// lastHoldMs is how long the last frame is shown when endT is not
	// after it.
	lastHoldMs = 100
)

// VideoOptions tunes MakeMP4. The zero value (or nil) means the defaults.
type VideoOptions struct {
	// FFmpeg is the ffmpeg program (default: FindFFmpeg). It needs ffmpeg
	// 5.1 or newer with libx264.
	FFmpeg string
	// FPS is the output frame rate. 0 (default) is a variable frame rate:
	// each frame is in the video once, at its t to the millisecond. Above
	// 0, the video has that constant rate, a frame repeated until the next.
	FPS float64
	// Width is the video's width (default: the first usable frame's width,
	// at most MaxVideoWidth); the height follows the first usable frame's
	// aspect. Both are made even. Frames of other sizes are scaled to fit
	// and padded with black.
	Width int
	// CRF is the x264 constant rate factor (0: DefaultCRF).
	CRF int
	// Preset is the x264 preset (default: DefaultPreset).
	Preset string
}

// Video describes an MP4 that MakeMP4 wrote.
type Video struct {
	Path          string
	Width, Height int
	// Frames is how many frames went to ffmpeg; Skipped how many were left
	// out (unreadable, not an image, over the limits, not after the frame
	// before). ffmpeg also drops a frame whose data is corrupt past its
	// header: the frame before it is then held longer.
	Frames, Skipped int
	// DurationMs is the video's length: endT.
	DurationMs float64
}

// MakeMP4 writes an MP4 video (H.264, yuv420p) of frames to out: see
// MakeMP4Seq.
func MakeMP4(ctx context.Context, frames []Frame, endT float64, out string, o *VideoOptions) (Video, error) {
	return MakeMP4Seq(ctx, slices.Values(frames), endT, out, o)
}

// MakeMP4Seq writes an MP4 video (H.264, yuv420p, even dimensions, seekable
// every 2 s, moov first for streaming) of frames, given in order of t, to
// out. The video's clock is the operation's: it starts at t = 0 with the
// first frame, each frame is held until the next frame's t and the last
// until endT (ms; when endT is not after it, for 100 ms), so cues of events at their t (EventCues, WriteVTT) line
// up with it. Frames that cannot be used are skipped, never a failure: a
// missing file, a file that is not a JPEG or PNG or whose header is bad or
// over MaxDim, a frame whose t is not after the one before (of frames at
// the same ms, the last is kept). Frames are read one at a time and handed
// to ffmpeg through its concat demuxer: memory does not grow with their
// number. Frames of the other format than the first one's (JPEG among PNG
// or PNG among JPEG) are converted to it first, in a temporary directory
// beside out. The video is written to a temporary file and renamed to out
// when complete. With no usable frame it is ErrNoFrames.
func MakeMP4Seq(ctx context.Context, frames iter.Seq[Frame], endT float64, out string, o *VideoOptions) (Video, error) {
	var opt VideoOptions
	if o != nil {
		opt = *o
	}
	if opt.FFmpeg == "" {
		p, err := FindFFmpeg()
		if err != nil {
			return Video{}, err
		}
		opt.FFmpeg = p
	}
	if opt.CRF <= 0 {
		opt.CRF = DefaultCRF
	}
	if opt.Preset == "" {
		opt.Preset = DefaultPreset
	}
	if math.IsNaN(opt.FPS) || math.IsInf(opt.FPS, 0) || opt.FPS < 0 || opt.FPS > 240 {
		return Video{}, fmt.Errorf("make mp4: fps %v out of 0..240", opt.FPS)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), ".mp4-")
	if err != nil {
		return Video{}, fmt.Errorf("make mp4: %w", err)
	}
	defer os.RemoveAll(tmp)

	l, err := writeConcatList(ctx, tmp, frames, endT)
	if err != nil {
		return Video{}, err
	}
	v := Video{Path: out, Frames: l.frames, Skipped: l.skipped, DurationMs: l.endMs}
	if l.frames == 0 {
		return v, ErrNoFrames
	}
	v.Width, v.Height = videoSize(opt.Width, l.w, l.h)

	partial := filepath.Join(tmp, "video.mp4")
	args := []string{"-nostdin", "-hide_banner", "-loglevel", "error", "-y",
		"-protocol_whitelist", "file", "-err_detect", "explode",
		"-f", "concat", "-safe", "0", "-i", l.path,
		"-an", "-sn", "-dn", "-map_metadata", "-1",
		"-vf", fmt.Sprintf("scale=%d:%d:force_original_aspect_ratio=decrease:flags=bicubic,pad=%d:%d:(ow-iw)/2:(oh-ih)/2,setsar=1,format=yuv420p",
			v.Width, v.Height, v.Width, v.Height),
		"-c:v", "libx264", "-preset", opt.Preset, "-crf", strconv.Itoa(opt.CRF), "-pix_fmt", "yuv420p",
		"-force_key_frames", fmt.Sprintf("expr:gte(t,n_forced*%d)", keyframeEvery),
	}
	if opt.FPS > 0 {
		args = append(args, "-fps_mode", "cfr", "-r", strconv.FormatFloat(opt.FPS, 'f', -1, 64))
	} else {
		args = append(args, "-fps_mode", "vfr", "-video_track_timescale", "1000")
	}
	args = append(args, "-t", fmt.Sprintf("%.3f", l.endMs/1000), "-movflags", "+faststart", "-f", "mp4", partial)
	cmd := exec.CommandContext(ctx, opt.FFmpeg, args...)
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return v, fmt.Errorf("make mp4: %w", ctx.Err())
		}
		return v, fmt.Errorf("ffmpeg: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := os.Rename(partial, out); err != nil {
		return v, fmt.Errorf("make mp4: %w", err)
	}
	return v, nil
}

// videoSize returns the even video size for width (0: the frame's, at
// most MaxVideoWidth) and the first frame's w×h.
func videoSize(width, w, h int) (int, int) {
	if width <= 0 {
		width = w
	}
	width = min(width, MaxVideoWidth) &^ 1
	height := int(math.Round(float64(width)*float64(h)/float64(w))) &^ 1
	return max(width, 2), max(height, 2)
}

// concatList is an ffconcat file written from frames.
type concatList struct {
	path            string
	frames, skipped int
	w, h            int     // the first frame's size
	endMs           float64 // the video's length
}

// writeConcatList writes the ffconcat list of frames in dir: each usable
// frame with the time until the next one, the last one until endT, and the
// last one again so that it is held until endT.
func writeConcatList(ctx context.Context, dir string, frames iter.Seq[Frame], endT float64) (concatList, error) {
	l := concatList{path: filepath.Join(dir, "frames.ffconcat")}
	f, err := os.Create(l.path)
	if err != nil {
		return l, fmt.Errorf("make mp4: %w", err)
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	bw.WriteString("ffconcat version 1.0\n")

	var stream format
	var pending string       // the last usable frame's file, not yet listed
	var pendingT, from int64 // its t, and the video time it is shown from
	entry := func(path string, durMs int64) {
		fmt.Fprintf(bw, "file %s\noption framerate 1000\nduration %d.%03d\n", concatQuote(path), durMs/1000, durMs%1000)
	}
	seen := 0 // frames looked at: names converted copies
	for fr := range frames {
		seen++
		if ctx.Err() != nil {
			return l, fmt.Errorf("make mp4: %w", ctx.Err())
		}
		if math.IsNaN(fr.T) || math.IsInf(fr.T, 0) {
			l.skipped++
			continue
		}
		t := max(int64(math.Round(fr.T)), 0)
		if pending != "" && t < pendingT {
			l.skipped++
			continue
		}
		path, err := usableFrame(fr.Path, dir, seen, &stream, &l.w, &l.h)
		if err != nil {
			l.skipped++
			continue
		}
		switch {
		case pending == "": // the video starts at 0 with the first frame
			from = 0
		case t == pendingT: // the later frame at the same ms replaces it
			l.skipped++
		default:
			entry(pending, t-from)
			l.frames++
			from = t
		}
		pending, pendingT = path, t
	}
	if pending != "" {
		end := pendingT + lastHoldMs
		if !math.IsNaN(endT) && !math.IsInf(endT, 0) && int64(math.Round(endT)) > pendingT {
			end = int64(math.Round(endT))
		}
		end = max(end, from+2)
		// The last frame until 1 ms before the end, then once more for 1 ms:
		// a frame's duration comes from the next one's time.
		entry(pending, end-1-from)
		entry(pending, 1)
		l.frames++
		l.endMs = float64(end)
	}
	if err := bw.Flush(); err != nil {
		return l, fmt.Errorf("make mp4: %w", err)
	}
	if err := f.Close(); err != nil {
		return l, fmt.Errorf("make mp4: %w", err)
	}
	return l, nil
}

// usableFrame checks the frame file at path and returns the file to list:
// path itself (absolute), or a copy converted to the stream's format (the
// first usable frame's) in dir. It sets the stream format and size from the
// first usable frame.
func usableFrame(path, dir string, n int, stream *format, w, h *int) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(abs, "\n\r\x00") {
		return "", errors.New("path with a line break")
	}
	f, fw, fh, err := probeFile(abs)
	if err != nil {
		return "", err
	}
	if *stream == formatUnknown {
		*stream, *w, *h = f, fw, fh
	}
	if f == *stream {
		return abs, nil
	}
	return convertFrame(abs, filepath.Join(dir, fmt.Sprintf("c%07d", n)), *stream)
}

// convertFrame decodes the image at path and writes it in format f at
// base plus its extension.
func convertFrame(path, base string, f format) (string, error) {
	r, err := decodeFile(path, MaxDim)
	if err != nil {
		return "", err
	}
	img := r.scaled(r.w, r.h)
	out, err := os.Create(base + map[format]string{formatJPEG: ".jpg", formatPNG: ".png"}[f])
	if err != nil {
		return "", err
	}
	defer out.Close()
	if f == formatPNG {
		err = png.Encode(out, img)
	} else {
		var b []byte
		if b, err = encodeJPEG(img, 90); err == nil {
			_, err = out.Write(b)
		}
	}
	if err != nil {
		return "", err
	}
	return out.Name(), out.Close()
}

// concatQuote quotes a path for an ffconcat file.
func concatQuote(p string) string {
	return "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = slices.Clone(t.b[len(t.b)-t.max:])
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
