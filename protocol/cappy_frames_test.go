package protocol

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"testing"
)

// testImage encodes a w x h picture as mime.
func testImage(t testing.TB, mime string, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 80, 255})
		}
	}
	var b bytes.Buffer
	var err error
	if mime == MimePNG {
		err = png.Encode(&b, img)
	} else {
		err = jpeg.Encode(&b, img, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func frameJSON(op string, t float64, mime string, w, h int, data []byte, extra string) string {
	return fmt.Sprintf(`{"type":"frame","op":%q,"t":%v,"mime":%q,"width":%d,"height":%d,"data":%q%s}`,
		op, t, mime, w, h, base64.StdEncoding.EncodeToString(data), extra)
}

func TestDecodeFrame(t *testing.T) {
	jpg, pngb := testImage(t, MimeJPEG, 64, 36), testImage(t, MimePNG, 40, 30)
	for _, in := range []string{
		frameJSON("op_1", 500, MimeJPEG, 64, 36, jpg, ""),
		frameJSON("op_1", 0, MimePNG, 40, 30, pngb, `,"reason":"BOSS_PHASE"`),
	} {
		m, err := DecodeAdapterMessage([]byte(in))
		if err != nil {
			t.Fatalf("%v\n%.200s", err, in)
		}
		if m.Frame == nil || m.Op() != "op_1" || len(m.Frame.Data) == 0 || SniffFrameMime(m.Frame.Data) != m.Frame.Mime {
			t.Fatalf("decoded %+v", m)
		}
	}
	big := make([]byte, MaxFrameBytes+1)
	copy(big, jpg)
	bad := map[string]struct{ in, field string }{
		"bad base64":          {strings.Replace(frameJSON("o", 1, MimeJPEG, 64, 36, jpg, ""), `"data":"`, `"data":"*`, 1), "data"},
		"jpeg said png":       {frameJSON("o", 1, MimePNG, 64, 36, jpg, ""), "data"},
		"png said jpeg":       {frameJSON("o", 1, MimeJPEG, 40, 30, pngb, ""), "data"},
		"not an image":        {frameJSON("o", 1, MimeJPEG, 64, 36, []byte("hello, world"), ""), "data"},
		"wrong dimensions":    {frameJSON("o", 1, MimeJPEG, 65, 36, jpg, ""), "data"},
		"huge dimensions":     {frameJSON("o", 1, MimeJPEG, 5000, 36, jpg, ""), "width"},
		"zero height":         {frameJSON("o", 1, MimeJPEG, 64, 0, jpg, ""), "width"},
		"over 1 MiB":          {frameJSON("o", 1, MimeJPEG, 64, 36, big, ""), "data"},
		"empty data":          {frameJSON("o", 1, MimeJPEG, 64, 36, nil, ""), "data"},
		"gif":                 {frameJSON("o", 1, "image/gif", 64, 36, jpg, ""), "mime"},
		"negative t":          {frameJSON("o", -1, MimeJPEG, 64, 36, jpg, ""), "t"},
		"no op":               {frameJSON("", 1, MimeJPEG, 64, 36, jpg, ""), "op"},
		"unknown field":       {frameJSON("o", 1, MimeJPEG, 64, 36, jpg, `,"zoom":2`), "zoom"},
		"control in reason":   {frameJSON("o", 1, MimeJPEG, 64, 36, jpg, `,"reason":"a\u0007b"`), "reason"},
		"truncated jpeg head": {frameJSON("o", 1, MimeJPEG, 64, 36, jpg[:20], ""), "data"},
	}
	for name, c := range bad {
		_, err := DecodeAdapterMessage([]byte(c.in))
		var fe *FieldError
		if !errors.As(err, &fe) {
			t.Errorf("%s: want a field error, got %v", name, err)
			continue
		}
		if fe.Field != c.field {
			t.Errorf("%s: error names %q, want %q (%v)", name, fe.Field, c.field, err)
		}
	}
}

func TestFramesRequestValidate(t *testing.T) {
	good := FramesRequest{FPS: 2, MaxWidth: 640, Formats: []string{MimeJPEG, MimePNG}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]FramesRequest{
		"fps too low":      {FPS: 0.05, MaxWidth: 640, Formats: []string{MimeJPEG}},
		"fps too high":     {FPS: 31, MaxWidth: 640, Formats: []string{MimeJPEG}},
		"width too small":  {FPS: 2, MaxWidth: 8, Formats: []string{MimeJPEG}},
		"width too large":  {FPS: 2, MaxWidth: 5000, Formats: []string{MimeJPEG}},
		"no formats":       {FPS: 2, MaxWidth: 640},
		"unknown format":   {FPS: 2, MaxWidth: 640, Formats: []string{"image/webp"}},
		"duplicate format": {FPS: 2, MaxWidth: 640, Formats: []string{MimeJPEG, MimeJPEG}},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The request reaches adapters inside the three operation messages.
	b, _ := json.Marshal(RecordStart{Type: "record_start", Op: "op_1", Frames: &good})
	typ, v, err := DecodeControllerMessage(b)
	if err != nil || typ != "record_start" || v.(*RecordStart).Frames.FPS != 2 {
		t.Fatalf("%s %+v %v", typ, v, err)
	}
	b, _ = json.Marshal(PrepareScenario{Type: "prepare_scenario", Op: "op_1", Scenario: "s"})
	if bytes.Contains(b, []byte("frames")) {
		t.Fatalf("an operation without frames must not mention them: %s", b)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(frameJSON("op_1", 500, MimeJPEG, 64, 36, testImage(f, MimeJPEG, 64, 36), "")))
	f.Add([]byte(frameJSON("op_1", 500, MimePNG, 40, 30, testImage(f, MimePNG, 40, 30), `,"reason":"X"`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeAdapterMessage(data)
		if err != nil || m.Frame == nil {
			return
		}
		fr := m.Frame
		if len(fr.Data) == 0 || len(fr.Data) > MaxFrameBytes || fr.Width > MaxFrameSide || fr.Height > MaxFrameSide || SniffFrameMime(fr.Data) != fr.Mime {
			t.Fatalf("accepted a bad frame: %+v", fr)
		}
	})
}
