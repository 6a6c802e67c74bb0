package demogame

import (
	"fmt"
	"image/color"
)

// Palettes are the colour schemes Demo Arena can draw with: a test knob
// (Game.SetPalette, `crosscode-mcp demo-game -palette`) that changes every
// picture and nothing else, for tests of visual divergence. The first is
// the default.
var Palettes = []string{"classic", "night"}

type palette struct {
	void, floorA, floorB, wall color.RGBA
	phase                      [4]color.RGBA // the arena's rim and the boss bar by boss phase (0: none)
	units                      map[string]color.RGBA
	flash, shield, bolt, fire  color.RGBA
	meteor, hpBack, hpGood     color.RGBA
	hpMid, hpLow, text, dim    color.RGBA
	crit, shadow, panel, band  color.RGBA // panel and band are translucent
	track, flagDone, flagNext  color.RGBA
	flagTodo, stress, ground   color.RGBA // ground: shadows on the floor
}

var classic = &palette{
	void:   color.RGBA{24, 22, 28, 255},
	floorA: color.RGBA{176, 164, 140, 255},
	floorB: color.RGBA{162, 150, 126, 255},
	wall:   color.RGBA{92, 84, 76, 255},
	phase:  [4]color.RGBA{{120, 110, 100, 255}, {222, 160, 40, 255}, {214, 64, 40, 255}, {168, 40, 190, 255}},
	units: map[string]color.RGBA{
		"knight": {60, 110, 200, 255}, "rogue": {40, 150, 80, 255}, "mage": {130, 70, 200, 255},
		"golem_king": {120, 84, 56, 255}, "skeleton": {226, 222, 204, 255}, "slime": {90, 190, 60, 255}, "ogre": {110, 120, 50, 255},
	},
	flash: color.RGBA{255, 255, 255, 255}, shield: color.RGBA{120, 200, 255, 255},
	bolt: color.RGBA{140, 220, 255, 255}, fire: color.RGBA{255, 140, 30, 255}, meteor: color.RGBA{230, 40, 20, 255},
	hpBack: color.RGBA{60, 16, 16, 255}, hpGood: color.RGBA{60, 200, 70, 255}, hpMid: color.RGBA{230, 200, 40, 255}, hpLow: color.RGBA{230, 50, 40, 255},
	text: color.RGBA{250, 246, 236, 255}, dim: color.RGBA{200, 196, 186, 255}, crit: color.RGBA{255, 220, 40, 255},
	shadow: color.RGBA{20, 16, 12, 255}, panel: color.RGBA{16, 14, 20, 170}, band: color.RGBA{10, 8, 14, 160},
	track: color.RGBA{206, 188, 140, 255}, flagDone: color.RGBA{60, 200, 70, 255}, flagNext: color.RGBA{240, 200, 30, 255},
	flagTodo: color.RGBA{110, 104, 96, 255}, stress: color.RGBA{60, 110, 200, 255}, ground: color.RGBA{118, 108, 90, 255},
}

// night swaps every colour for a dark, cold one.
var night = &palette{
	void:   color.RGBA{2, 4, 10, 255},
	floorA: color.RGBA{28, 38, 66, 255},
	floorB: color.RGBA{22, 30, 56, 255},
	wall:   color.RGBA{60, 70, 110, 255},
	phase:  [4]color.RGBA{{70, 80, 120, 255}, {40, 200, 220, 255}, {60, 120, 255, 255}, {240, 240, 255, 255}},
	units: map[string]color.RGBA{
		"knight": {250, 190, 70, 255}, "rogue": {250, 110, 170, 255}, "mage": {120, 250, 200, 255},
		"golem_king": {190, 200, 230, 255}, "skeleton": {90, 100, 140, 255}, "slime": {200, 80, 240, 255}, "ogre": {240, 120, 90, 255},
	},
	flash: color.RGBA{255, 60, 60, 255}, shield: color.RGBA{255, 230, 120, 255},
	bolt: color.RGBA{255, 120, 220, 255}, fire: color.RGBA{80, 200, 255, 255}, meteor: color.RGBA{40, 255, 120, 255},
	hpBack: color.RGBA{10, 20, 40, 255}, hpGood: color.RGBA{70, 160, 255, 255}, hpMid: color.RGBA{200, 120, 255, 255}, hpLow: color.RGBA{255, 90, 200, 255},
	text: color.RGBA{180, 220, 255, 255}, dim: color.RGBA{110, 140, 180, 255}, crit: color.RGBA{120, 255, 200, 255},
	shadow: color.RGBA{0, 0, 0, 255}, panel: color.RGBA{200, 220, 255, 60}, band: color.RGBA{200, 220, 255, 50},
	track: color.RGBA{50, 66, 104, 255}, flagDone: color.RGBA{70, 160, 255, 255}, flagNext: color.RGBA{255, 90, 200, 255},
	flagTodo: color.RGBA{40, 50, 80, 255}, stress: color.RGBA{250, 190, 70, 255}, ground: color.RGBA{10, 14, 30, 255},
}

func paletteNamed(name string) (*palette, error) {
	switch name {
	case "", "classic":
		return classic, nil
	case "night":
		return night, nil
	}
	return nil, fmt.Errorf("demogame: no palette %q (palettes: %v)", name, Palettes)
}
