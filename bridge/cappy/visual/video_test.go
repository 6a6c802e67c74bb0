package visual

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crosscode/crosscode-mcp/internal/testing/sysdeps"
)

// videoFrames writes the frames of the video tests: 320x180 frames every
// 250 ms, each with its own floor colour, JPEG and PNG mixed, one of
// another size, and frames that must be skipped.
func videoFrames(t *testing.T) (frames []Frame, colours map[float64]color.RGBA) {
	dir := t.TempDir()
	colours = map[float64]color.RGBA{}
	for i := range 12 {
		ts := float64(i * 250)
		s := arena(320, 180)
		s.floor = cellColour(i * 2)
		colours[ts] = s.floor
		name := fmt.Sprintf("f%02d", i)
		switch i % 4 {
		case 1:
			frames = append(frames, Frame{T: ts, Path: writePNG(t, dir, name+".png", s.render()), Mime: MimePNG})
		case 3:
			s.w, s.h = 160, 120 // another size and aspect
			frames = append(frames, Frame{T: ts, Path: writeJPEG(t, dir, name+".jpg", s.render(), 90), Mime: MimeJPEG})
		default:
			frames = append(frames, Frame{T: ts, Path: writeJPEG(t, dir, name+".jpg", s.render(), 90), Mime: MimeJPEG})
		}
	}
	bad := []Frame{
		{T: 2760, Path: filepath.Join(dir, "missing.jpg")},
		{T: 2770, Path: writeFile(t, dir, "text.jpg", []byte("not an image"))},
		{T: 2780, Path: writeFile(t, dir, "bomb.jpg", jpegWithSize(t, 60000, 60000))},
		{T: 100, Path: frames[0].Path}, // out of order
		{T: math.NaN(), Path: frames[0].Path},
	}
	// The frame at 2750 ms is replaced by a later one at the same ms.
	last := arena(320, 180)
	last.floor = color.RGBA{230, 230, 20, 255}
	colours[2750] = last.floor
	frames = append(frames, bad...)
	frames = append(frames, Frame{T: 2750, Path: writeJPEG(t, dir, "last.jpg", last.render(), 90)})
	return frames, colours
}

// probe is what ffprobe says of a video.
type probe struct {
	Streams []struct {
		CodecName  string `json:"codec_name"`
		PixFmt     string `json:"pix_fmt"`
		Width      int    `json:"width"`
		Height     int    `json:"height"`
		RFrameRate string `json:"r_frame_rate"`
		NbPackets  string `json:"nb_read_packets"`
	} `json:"streams"`
	Format struct {
		Duration string `json:"duration"`
	} `json:"format"`
}

func ffprobe(t *testing.T, path string) (p probe, durationMs float64, packets int) {
	t.Helper()
	out, err := exec.Command(sysdeps.Need(t, "ffprobe"), "-v", "error", "-count_packets", "-select_streams", "v",
		"-show_entries", "stream=codec_name,pix_fmt,width,height,r_frame_rate,nb_read_packets:format=duration",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	if err := json.Unmarshal(out, &p); err != nil || len(p.Streams) != 1 {
		t.Fatalf("ffprobe: %v: %s", err, out)
	}
	d, _ := strconv.ParseFloat(p.Format.Duration, 64)
	n, _ := strconv.Atoi(p.Streams[0].NbPackets)
	return p, d * 1000, n
}

// decodeVideo returns the video's frames with their times (ms).
func decodeVideo(t *testing.T, path string) (pts []float64, imgs []image.Image) {
	t.Helper()
	out, err := exec.Command(sysdeps.Need(t, "ffprobe"), "-v", "error", "-select_streams", "v",
		"-show_entries", "frame=pts_time", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe frames: %v", err)
	}
	for _, l := range strings.Fields(string(out)) {
		v, err := strconv.ParseFloat(strings.TrimSuffix(l, ","), 64)
		if err != nil {
			t.Fatalf("pts %q: %v", l, err)
		}
		pts = append(pts, v*1000)
	}
	dir := t.TempDir()
	if out, err := exec.Command(sysdeps.Need(t, "ffmpeg"), "-v", "error", "-i", path, "-fps_mode", "passthrough",
		filepath.Join(dir, "%04d.png")).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg frames: %v: %s", err, out)
	}
	for i := range pts {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%04d.png", i+1)))
		if err != nil {
			t.Fatalf("frame %d of %d: %v", i+1, len(pts), err)
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		imgs = append(imgs, img)
	}
	return pts, imgs
}

// shownAt returns the frame shown at ms: the last one whose time is not
// after it.
func shownAt(pts []float64, imgs []image.Image, ms float64) image.Image {
	var img image.Image
	for i, p := range pts {
		if p <= ms {
			img = imgs[i]
		}
	}
	return img
}

func TestMakeMP4(t *testing.T) {
	t.Parallel()
	ffmpeg := sysdeps.Need(t, "ffmpeg")
	frames, colours := videoFrames(t)
	for _, fps := range []float64{0, 10} {
		t.Run(fmt.Sprintf("fps %v", fps), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "capture.mp4")
			const endT = 3300
			v, err := MakeMP4(context.Background(), frames, endT, out, &VideoOptions{FFmpeg: ffmpeg, FPS: fps})
			if err != nil {
				t.Fatal(err)
			}
			if v.Frames != 12 || v.Skipped != 6 || v.Width != 320 || v.Height != 180 || v.DurationMs != endT {
				t.Fatalf("video %+v", v)
			}
			p, dur, packets := ffprobe(t, out)
			s := p.Streams[0]
			if s.CodecName != "h264" || s.PixFmt != "yuv420p" || s.Width != 320 || s.Height != 180 {
				t.Fatalf("stream %+v", s)
			}
			frameMs := 1000 / 30.0
			if fps > 0 {
				frameMs = 1000 / fps
				if s.RFrameRate != "10/1" || packets < 32 || packets > 34 {
					t.Errorf("rate %s, %d frames, want 10/1 and 33", s.RFrameRate, packets)
				}
			} else if packets != v.Frames+1 { // the last frame is listed twice to hold it
				t.Errorf("%d frames, want %d", packets, v.Frames+1)
			}
			if math.Abs(dur-endT) > frameMs {
				t.Errorf("duration %.0f ms, want %d within a frame", dur, endT)
			}
			// Each frame is held until the next frame's t, the last to endT.
			pts, imgs := decodeVideo(t, out)
			for _, c := range []struct{ at, frame float64 }{{20, 0}, {625, 500}, {1125, 1000}, {2625, 2500}, {2900, 2750}, {3250, 2750}} {
				img := shownAt(pts, imgs, c.at)
				if img == nil {
					t.Fatalf("no frame at %v ms: %v", c.at, pts)
				}
				if ok, got := floorNear(img, image.Rect(4, 150, 20, 176), colours[c.frame]); !ok {
					t.Errorf("at %v ms: %s, want the frame of %v ms (%v)", c.at, got, c.frame, colours[c.frame])
				}
			}
		})
	}
}

func TestMakeMP4Failures(t *testing.T) {
	t.Parallel()
	ffmpeg := sysdeps.Need(t, "ffmpeg")
	dir := t.TempDir()
	out := filepath.Join(dir, "v.mp4")
	bad := []Frame{{T: 0, Path: filepath.Join(dir, "none.jpg")}, {T: 10, Path: writeFile(t, dir, "x.png", []byte("x"))}}
	if v, err := MakeMP4(context.Background(), bad, 1000, out, &VideoOptions{FFmpeg: ffmpeg}); !errors.Is(err, ErrNoFrames) || v.Skipped != 2 {
		t.Errorf("no usable frames: %+v, %v", v, err)
	}
	good := []Frame{{T: 0, Path: writeJPEG(t, dir, "a.jpg", arena(64, 36).render(), 80)}}
	if _, err := MakeMP4(context.Background(), good, 1000, out, &VideoOptions{FFmpeg: filepath.Join(dir, "no-ffmpeg")}); err == nil {
		t.Error("a missing ffmpeg made a video")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := MakeMP4(ctx, good, 1000, out, &VideoOptions{FFmpeg: ffmpeg}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed video left %s", out)
	}
	if _, err := MakeMP4(context.Background(), good, 1000, out, &VideoOptions{FFmpeg: ffmpeg, FPS: -1}); err == nil {
		t.Error("a negative rate was accepted")
	}
	// One frame, endT before it: held 100 ms.
	v, err := MakeMP4(context.Background(), []Frame{{T: 500, Path: good[0].Path}}, 0, out, &VideoOptions{FFmpeg: ffmpeg, Width: 33})
	if err != nil {
		t.Fatal(err)
	}
	if _, dur, _ := ffprobe(t, out); v.Width != 32 || v.Height != 18 || math.Abs(dur-600) > 5 {
		t.Errorf("one frame: %+v, %.0f ms", v, dur)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			t.Errorf("temporary directory %s left", e.Name())
		}
	}
}

func TestFindFFmpeg(t *testing.T) {
	want := sysdeps.Need(t, "ffmpeg")
	if p, err := FindFFmpeg(); err != nil || p != want {
		t.Errorf("FindFFmpeg = %q, %v", p, err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := FindFFmpeg(); !errors.Is(err, ErrNoFFmpeg) {
		t.Errorf("without ffmpeg: %v", err)
	}
	if _, err := MakeMP4(context.Background(), nil, 0, filepath.Join(t.TempDir(), "v.mp4"), nil); !errors.Is(err, ErrNoFFmpeg) {
		t.Errorf("MakeMP4 without ffmpeg: %v", err)
	}
}

// A PNG stream, with a JPEG among its frames converted to PNG.
func TestMakeMP4PNG(t *testing.T) {
	t.Parallel()
	ffmpeg := sysdeps.Need(t, "ffmpeg")
	dir := t.TempDir()
	var frames []Frame
	for i := range 4 {
		s := arena(200, 100)
		s.floor = cellColour(i * 5)
		if i == 2 {
			frames = append(frames, Frame{T: float64(i * 400), Path: writeJPEG(t, dir, fmt.Sprintf("f%d.jpg", i), s.render(), 90)})
			continue
		}
		frames = append(frames, Frame{T: float64(i * 400), Path: writePNG(t, dir, fmt.Sprintf("f%d.png", i), s.render())})
	}
	out := filepath.Join(dir, "png.mp4")
	v, err := MakeMP4(context.Background(), frames, 2000, out, &VideoOptions{FFmpeg: ffmpeg})
	if err != nil {
		t.Fatal(err)
	}
	p, dur, packets := ffprobe(t, out)
	if v.Frames != 4 || v.Skipped != 0 || packets != 5 || math.Abs(dur-2000) > 34 || p.Streams[0].Width != 200 || p.Streams[0].Height != 100 {
		t.Fatalf("video %+v: %d frames, %.0f ms, %+v", v, packets, dur, p.Streams[0])
	}
	pts, imgs := decodeVideo(t, out)
	for i := range 4 {
		if ok, got := floorNear(shownAt(pts, imgs, float64(i*400+200)), image.Rect(2, 80, 14, 96), cellColour(i*5)); !ok {
			t.Errorf("frame %d: %s, want %v", i, got, cellColour(i*5))
		}
	}
}
