package glob
import "testing"
func BenchmarkPairs(b *testing.B) {
	for _, p := range [][2]string{{"src/mod42/**", "**/*.md"}, {"**/*.png", "src/mod42/**"}, {"**/*.png", "assets/lvl42/*.png"}, {"src/mod42/game/boss.gd", "src/mod42/**"}} {
		x, y := compile(p[0]).alts[0], compile(p[1]).alts[0]
		b.Run(p[0]+"|"+p[1], func(b *testing.B) {
			for b.Loop() { altOverlap(x, y) }
		})
	}
}
