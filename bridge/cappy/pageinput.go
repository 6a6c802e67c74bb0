package cappy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/crosscode/crosscode-mcp/internal/sanitize"
	"github.com/crosscode/crosscode-mcp/protocol"
)

// The page driver's actions: the keyboard's keys by KeyboardEvent.code,
// as buttons, and the pointer in the pixels of the frames, dispatched as
// trusted input through the DevTools protocol.

// PagePointer is the page driver's pointer action.
const PagePointer = "pointer"

// pageKey is one key of the keyboard as a US layout types it with
// NumLock on: its KeyboardEvent.code, key (and key with Shift held),
// keyCode, location (0 standard, 1 left, 2 right, 3 numpad) and whether
// it types its key.
type pageKey struct {
	Code, Key, ShiftKey string
	KeyCode, Location   int64
	Types               bool
}

// Key locations (KeyboardEvent.location).
const (
	keyStandard = 0
	keyLeft     = 1
	keyRight    = 2
	keyNumpad   = 3
)

// pageKeyList is every key the page driver offers, in the order of the UI
// Events' code tables (the alphanumeric section, the control pad, the
// arrows, the numpad, the function row, the media keys), by
// KeyboardEvent.code. Left out: keys that act on the browser or the
// machine rather than the page (Browser*, Launch*, Power, Sleep, WakeUp,
// Eject, MediaSelect), Fn and FnLock (a keyboard keeps them), NumpadHash
// and NumpadStar (a phone's keys, which Chromium does not know), and the
// legacy and non-standard ones (Hyper, Super, Copy, Paste, Undo, ...).
var pageKeyList = sync.OnceValue(func() []pageKey {
	var keys []pageKey
	add := func(k pageKey) { keys = append(keys, k) }
	named := func(code, key string, keyCode, loc int64) {
		add(pageKey{Code: code, Key: key, KeyCode: keyCode, Location: loc})
	}
	typed := func(code, key, shift string, keyCode, loc int64) {
		add(pageKey{Code: code, Key: key, ShiftKey: shift, KeyCode: keyCode, Location: loc, Types: true})
	}
	// The alphanumeric section.
	typed("Backquote", "`", "~", 192, keyStandard)
	for i, shift := range []string{")", "!", "@", "#", "$", "%", "^", "&", "*", "("} {
		typed(fmt.Sprintf("Digit%d", i), fmt.Sprint(i), shift, int64('0'+i), keyStandard)
	}
	for c := 'A'; c <= 'Z'; c++ {
		typed("Key"+string(c), strings.ToLower(string(c)), string(c), int64(c), keyStandard)
	}
	for _, k := range []struct {
		code, key, shift string
		keyCode          int64
	}{{"Minus", "-", "_", 189}, {"Equal", "=", "+", 187}, {"BracketLeft", "[", "{", 219}, {"BracketRight", "]", "}", 221},
		{"Backslash", "\\", "|", 220}, {"Semicolon", ";", ":", 186}, {"Quote", "'", "\"", 222}, {"Comma", ",", "<", 188},
		{"Period", ".", ">", 190}, {"Slash", "/", "?", 191}, {"IntlBackslash", "\\", "|", 226}, {"IntlRo", "\\", "_", 193}, {"IntlYen", "¥", "|", 220}} {
		typed(k.code, k.key, k.shift, k.keyCode, keyStandard)
	}
	typed("Space", " ", " ", 32, keyStandard)
	add(pageKey{Code: "Enter", Key: "Enter", KeyCode: 13, Types: true})
	named("Tab", "Tab", 9, keyStandard)
	named("Backspace", "Backspace", 8, keyStandard)
	named("CapsLock", "CapsLock", 20, keyStandard)
	named("ContextMenu", "ContextMenu", 93, keyStandard)
	for _, m := range []struct {
		name        string
		left, right int64
	}{{"Shift", 16, 16}, {"Control", 17, 17}, {"Alt", 18, 18}, {"Meta", 91, 92}} {
		named(m.name+"Left", m.name, m.left, keyLeft)
		named(m.name+"Right", m.name, m.right, keyRight)
	}
	for _, k := range []struct {
		code, key string
		keyCode   int64
	}{{"Convert", "Convert", 28}, {"NonConvert", "NonConvert", 29}, {"KanaMode", "KanaMode", 21},
		{"Lang1", "HangulMode", 21}, {"Lang2", "HanjaMode", 25}, {"Lang3", "Katakana", 0}, {"Lang4", "Hiragana", 0}, {"Lang5", "ZenkakuHankaku", 0},
		// The control pad and the arrows.
		{"Insert", "Insert", 45}, {"Delete", "Delete", 46}, {"Home", "Home", 36}, {"End", "End", 35}, {"PageUp", "PageUp", 33},
		{"PageDown", "PageDown", 34}, {"Help", "Help", 47},
		{"ArrowLeft", "ArrowLeft", 37}, {"ArrowRight", "ArrowRight", 39}, {"ArrowUp", "ArrowUp", 38}, {"ArrowDown", "ArrowDown", 40}} {
		named(k.code, k.key, k.keyCode, keyStandard)
	}
	// The numpad, with NumLock on.
	named("NumLock", "NumLock", 144, keyStandard)
	for i := range 10 {
		typed(fmt.Sprintf("Numpad%d", i), fmt.Sprint(i), fmt.Sprint(i), int64(96+i), keyNumpad)
	}
	for _, k := range []struct {
		code, key string
		keyCode   int64
	}{{"NumpadAdd", "+", 107}, {"NumpadSubtract", "-", 109}, {"NumpadMultiply", "*", 106}, {"NumpadDivide", "/", 111},
		{"NumpadDecimal", ".", 110}, {"NumpadComma", ",", 194}, {"NumpadEqual", "=", 187}, {"NumpadParenLeft", "(", 0},
		{"NumpadParenRight", ")", 0}} {
		typed(k.code, k.key, k.key, k.keyCode, keyNumpad)
	}
	add(pageKey{Code: "NumpadEnter", Key: "Enter", KeyCode: 13, Location: keyNumpad, Types: true})
	for _, k := range []struct {
		code, key string
		keyCode   int64
	}{{"NumpadBackspace", "Backspace", 8}, {"NumpadClear", "Clear", 12}, {"NumpadClearEntry", "Clear", 12},
		{"NumpadMemoryAdd", "Unidentified", 0}, {"NumpadMemoryClear", "Unidentified", 0}, {"NumpadMemoryRecall", "Unidentified", 0},
		{"NumpadMemoryStore", "Unidentified", 0}, {"NumpadMemorySubtract", "Unidentified", 0}} {
		named(k.code, k.key, k.keyCode, keyNumpad)
	}
	// The function section.
	named("Escape", "Escape", 27, keyStandard)
	for i := 1; i <= 24; i++ {
		named(fmt.Sprintf("F%d", i), fmt.Sprintf("F%d", i), int64(111+i), keyStandard)
	}
	named("PrintScreen", "PrintScreen", 44, keyStandard)
	named("ScrollLock", "ScrollLock", 145, keyStandard)
	named("Pause", "Pause", 19, keyStandard)
	// The media keys a game may hear.
	for _, k := range []struct {
		code    string
		keyCode int64
	}{{"MediaPlayPause", 179}, {"MediaStop", 178}, {"MediaTrackNext", 176}, {"MediaTrackPrevious", 177},
		{"AudioVolumeDown", 174}, {"AudioVolumeUp", 175}, {"AudioVolumeMute", 173}} {
		named(k.code, k.code, k.keyCode, keyStandard)
	}
	return keys
})

// pageKeys maps a code to its key.
var pageKeys = sync.OnceValue(func() map[string]*pageKey {
	m := map[string]*pageKey{}
	list := pageKeyList()
	for i := range list {
		m[list[i].Code] = &list[i]
	}
	return m
})

// pagePointerAction is the pointer as an action.
var pagePointerAction = protocol.Action{Name: PagePointer, Kind: protocol.ActionPointer,
	Description: "the mouse: x, y in the pixels of the game's frames; pressed true/false presses or releases button (left, middle or right)"}

// pageActions are the actions the page driver declares: the keys (by
// their code, as buttons) and the pointer that names lists, or every key
// and the pointer when names is empty. The names are checked when the
// capture config loads (CheckPageActions).
func pageActions(names []string) []protocol.Action {
	if len(names) == 0 {
		out := make([]protocol.Action, 0, len(pageKeyList())+1)
		for _, k := range pageKeyList() {
			out = append(out, protocol.Action{Name: k.Code, Kind: protocol.ActionButton})
		}
		return append(out, pagePointerAction)
	}
	out := make([]protocol.Action, 0, len(names))
	for _, n := range names {
		if n == PagePointer {
			out = append(out, pagePointerAction)
		} else if pageKeys()[n] != nil {
			out = append(out, protocol.Action{Name: n, Kind: protocol.ActionButton})
		}
	}
	return out
}

// CheckPageActions checks the keys and pointer a capture config names for
// the page driver (game.actions): every standard KeyboardEvent.code it
// offers, or "pointer", each once; an unknown name is refused with the
// nearest ones.
func CheckPageActions(names []string) error {
	if names == nil {
		return nil
	}
	if len(names) == 0 {
		return errors.New("game.actions: name at least one key (KeyboardEvent.code: ArrowLeft, KeyA, Space, ...) or \"pointer\", or leave game.actions out for every key and the pointer")
	}
	valid := make([]string, 0, len(pageKeyList())+1)
	for _, k := range pageKeyList() {
		valid = append(valid, k.Code)
	}
	valid = append(valid, PagePointer)
	seen := map[string]bool{}
	for _, n := range names {
		switch {
		case !slices.Contains(valid, n):
			hint := ""
			if near := protocol.NearNames(n, valid, 3); len(near) > 0 {
				hint = " (did you mean " + strings.Join(near, ", ") + "?)"
			}
			return fmt.Errorf("game.actions: %q is not a key the page driver offers%s: name keys by their KeyboardEvent.code (ArrowLeft, KeyA, Digit1, Space, ShiftLeft, Numpad0, F1, ...; docs/web-games.md lists them), and the mouse as \"pointer\"", sanitize.Line(n, 80), hint)
		case seen[n]:
			return fmt.Errorf("game.actions: %q is named twice", n)
		}
		seen[n] = true
	}
	return nil
}

// input applies a step's inputs, in order: keys go down or up (a key
// already as asked is left alone), the pointer moves and its button goes
// down or up. scale turns the frames' pixels into the page's.
func (t *pageTab) input(in []protocol.ActionInput, scale float64) error {
	for _, a := range in {
		var err error
		if a.Name == PagePointer {
			err = t.pointer(a, scale)
		} else {
			err = t.key(a.Name, a.Pressed != nil && *a.Pressed)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// key presses or releases a key as the keyboard would: its code, key
// (shifted while a Shift is held), keyCode and location, the modifiers
// held, and the text it types when it goes down.
func (t *pageTab) key(code string, down bool) error {
	k := pageKeys()[code]
	if k == nil {
		return fmt.Errorf("no key %q", code)
	}
	t.mu.Lock()
	same := t.keys[code] == down
	t.keys[code] = down
	var mods int64
	for name, bit := range map[string]int64{"Alt": 1, "Control": 2, "Meta": 4, "Shift": 8} {
		if t.keys[name+"Left"] || t.keys[name+"Right"] {
			mods |= bit
		}
	}
	t.mu.Unlock()
	if same {
		return nil
	}
	key := k.Key
	if mods&8 != 0 && k.ShiftKey != "" {
		key = k.ShiftKey
	}
	p := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Modifiers: mods, Code: k.Code, Key: key,
		WindowsVirtualKeyCode: k.KeyCode, NativeVirtualKeyCode: k.KeyCode}
	switch k.Location {
	case keyLeft, keyRight:
		p.Location = k.Location
	case keyNumpad:
		p.IsKeypad = ptrTo(true) // the protocol's location has left and right only
	}
	if down {
		p.Type = input.DispatchKeyEventTypeRawKeyDown
		if k.Types && mods&(1|2|4) == 0 { // Alt, Control or Meta held: a shortcut, not text
			text := key
			if k.Key == "Enter" {
				text = "\r"
			}
			p.Type, p.Text, p.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, text, text
		}
	}
	return t.dispatch(func(ctx context.Context) error {
		_, err := chromedp.Call(ctx, input.DispatchKeyEvent, p)
		return err
	})
}

func (t *pageTab) pointer(a protocol.ActionInput, scale float64) error {
	x, y := *a.X*scale, *a.Y*scale
	button := a.Button
	if button == "" {
		button = "left"
	}
	if !slices.Contains([]string{"left", "middle", "right"}, button) {
		return fmt.Errorf("pointer button %q: left, middle or right", button)
	}
	t.mu.Lock()
	moved := x != t.mouse.x || y != t.mouse.y
	t.mouse.x, t.mouse.y = x, y
	change := a.Pressed != nil && t.mouse.pressed[button] != *a.Pressed
	if change {
		t.mouse.pressed[button] = *a.Pressed
	}
	buttons := int64(0)
	for b, down := range t.mouse.pressed {
		if down {
			buttons |= map[string]int64{"left": 1, "right": 2, "middle": 4}[b]
		}
	}
	t.mu.Unlock()
	send := func(typ input.DispatchMouseEventType, clicks int64) error {
		return t.dispatch(func(ctx context.Context) error {
			_, err := chromedp.Call(ctx, input.DispatchMouseEvent, input.DispatchMouseEventParams{Type: typ, X: x, Y: y,
				Button: input.MouseButton(button), Buttons: buttons, ClickCount: clicks})
			return err
		})
	}
	if moved || !change {
		if err := send(input.DispatchMouseEventTypeMouseMoved, 0); err != nil {
			return err
		}
	}
	if change {
		typ := input.DispatchMouseEventTypeMouseReleased
		if *a.Pressed {
			typ = input.DispatchMouseEventTypeMousePressed
		}
		return send(typ, 1)
	}
	return nil
}

// dispatch runs one input call: the page's handlers run inside it, so a
// handler that never returns is a hung page.
func (t *pageTab) dispatch(f func(ctx context.Context) error) error {
	if f := t.faulted(); f != nil {
		return f
	}
	ctx, cancel := context.WithTimeout(t.ctx, pageEvalTimeout)
	defer cancel()
	err := f(ctx)
	if _, ferr := t.result(ctx, nil, nil, err); ferr != nil && err != nil {
		return ferr
	}
	if f := t.faulted(); f != nil {
		return f
	}
	return nil
}
