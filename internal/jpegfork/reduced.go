// This file is not from the Go distribution: it adds decoding at reduced
// scale to the fork.

package jpegfork

import "math"

// reducedBits is the fixed-point precision of the reduced IDCT matrices.
const reducedBits = 13

// reducedMatrix[k][n*n4+u] is C(u)/2 * cos((2n+1)uπ/(2N)) in fixed point
// for N = 4 (k=0) and N = 2 (k=1), n4 = 4: output sample n of an N-point
// inverse DCT from the N lowest of the 8 frequencies. Sampling the 8-point
// inverse DCT at the middle of each group of 8/N pixels gives exactly this
// N-point transform with the 8-point normalisation, so a reduced block is
// the full block's band-limited picture at 1/2 or 1/4 scale.
var reducedMatrix = func() (m [2][16]int32) {
	for k, n := range []int{4, 2} {
		for x := range n {
			for u := range n {
				c := 1.0
				if u == 0 {
					c = 1 / math.Sqrt2
				}
				v := c / 2 * math.Cos(float64((2*x+1)*u)*math.Pi/float64(2*n))
				m[k][x*4+u] = int32(math.Round(v * (1 << reducedBits)))
			}
		}
	}
	return m
}()

// zigOf is the inverse of unzig: the zig-zag index of each natural index.
var zigOf = func() (z [blockSize]int) {
	for zig, nat := range unzig {
		z[nat] = zig
	}
	return z
}()

// reducedIDCT writes the bs×bs (4, 2 or 1) picture of the dequantized block
// b (natural order) to dst, level-shifted and clipped.
func reducedIDCT(b *block, bs int, dst []byte, stride int) {
	if bs == 1 {
		dst[0] = clamp((b[0] + 4) >> 3)
		return
	}
	m := &reducedMatrix[0]
	if bs == 2 {
		m = &reducedMatrix[1]
	}
	const half = 1 << (reducedBits - 1)
	// Rows: tmp[v][x] from the bs lowest horizontal frequencies of row v.
	var tmp [16]int32
	for v := range bs {
		row := b[v*8 : v*8+bs]
		for x := range bs {
			var s int32
			for u, f := range row {
				s += m[x*4+u] * f
			}
			tmp[v*4+x] = (s + half) >> reducedBits
		}
	}
	// Columns.
	for y := range bs {
		out := dst[y*stride : y*stride+bs]
		for x := range bs {
			var s int32
			for v := range bs {
				s += m[y*4+v] * tmp[v*4+x]
			}
			out[x] = clamp((s + half) >> reducedBits)
		}
	}
}
