package visual

import "testing"

func TestJPEGShift(t *testing.T) {
	for _, c := range []struct {
		w, minW int
		want    uint
	}{
		{1280, 640, 1}, {1280, 641, 0}, {1280, 320, 2}, {1280, 160, 3}, {1280, 64, 3},
		{1280, 1280, 0}, {640, 640, 0}, {1001, 500, 1}, {1001, 126, 3}, {1001, 127, 2}, {8, 1, 3}, {1, 1, 3},
	} {
		if got := jpegShift(c.w, c.minW); got != c.want {
			t.Errorf("jpegShift(%d, %d) = %d, want %d", c.w, c.minW, got, c.want)
		}
	}
}
