// Package jpegfork is Go's image/jpeg (Go 1.26; BSD licence, see
// LICENSE), forked twice for what frames need, each fork held by its
// tests to the standard library's results where it does not mean to
// differ.
//
// Decode decodes at 1/2, 1/4 or 1/8 scale in the DCT domain, as libjpeg's
// scale_denom does, for comparing and showing frames smaller than they
// were sent; it is image/jpeg's decoder changed only where it
// reconstructs blocks (scan.go's makeImg and reconstructBlock, reduced.go)
// and in its entry point (Decode takes the scale; no DecodeConfig and no
// registration with package image). At scale 1 it decodes exactly as
// image/jpeg does.
//
// Encode is image/jpeg's encoder made faster for RGBA pictures encoded
// many times a second, and writes exactly the bytes image/jpeg writes: a
// block wholly inside an *image.RGBA is converted to YCbCr a row at a time
// with color.RGBToYCbCr's arithmetic inlined, and quantization divides by
// multiplying with a 48-bit reciprocal (exact for every dividend a
// coefficient can be). A 640x360 frame at quality 80 takes 2.3 ms here
// against image/jpeg's 3.1 ms (BenchmarkEncode).
//
// JPEG is defined in ITU-T T.81: https://www.w3.org/Graphics/JPEG/itu-t81.pdf.
package jpegfork
