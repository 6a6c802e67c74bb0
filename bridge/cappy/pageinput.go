package cappy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/crosscode/crosscode-mcp/protocol"
)

// The page driver's actions: the keyboard's keys by KeyboardEvent.code,
// as buttons, and the pointer in the pixels of the frames, dispatched as
// trusted input through the DevTools protocol.

// PagePointer is the page driver's pointer action.
const PagePointer = "pointer"

// pageKeyCodes are the keys offered as actions, by KeyboardEvent.code.
var pageKeyCodes = func() []string {
	codes := []string{"ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Space", "Enter", "Escape", "Tab", "Backspace",
		"ShiftLeft", "ShiftRight", "ControlLeft", "ControlRight", "AltLeft", "AltRight",
		"Minus", "Equal", "BracketLeft", "BracketRight", "Semicolon", "Quote", "Comma", "Period", "Slash", "Backslash", "Backquote",
		"Insert", "Delete", "Home", "End", "PageUp", "PageDown"}
	for c := 'A'; c <= 'Z'; c++ {
		codes = append(codes, "Key"+string(c))
	}
	for c := '0'; c <= '9'; c++ {
		codes = append(codes, "Digit"+string(c))
	}
	for i := 1; i <= 12; i++ {
		codes = append(codes, fmt.Sprintf("F%d", i))
	}
	return codes
}()

// pageKeys maps a code to its key (the unshifted one), from chromedp's
// keyboard tables.
var pageKeys = sync.OnceValue(func() map[string]*kb.Key {
	m := map[string]*kb.Key{}
	for _, k := range kb.Keys {
		if k.Code == "" || k.Shift {
			continue
		}
		if old, ok := m[k.Code]; ok && old.Key <= k.Key {
			continue // one per code, whichever the map gives first in key order
		}
		m[k.Code] = k
	}
	// Modifier and editing keys chromedp's tables name by key.
	for code, key := range map[string]*kb.Key{
		"ShiftLeft": {Code: "ShiftLeft", Key: "Shift", Windows: 16, Native: 16}, "ShiftRight": {Code: "ShiftRight", Key: "Shift", Windows: 16, Native: 16},
		"ControlLeft": {Code: "ControlLeft", Key: "Control", Windows: 17, Native: 17}, "ControlRight": {Code: "ControlRight", Key: "Control", Windows: 17, Native: 17},
		"AltLeft": {Code: "AltLeft", Key: "Alt", Windows: 18, Native: 18}, "AltRight": {Code: "AltRight", Key: "Alt", Windows: 18, Native: 18},
	} {
		if _, ok := m[code]; !ok {
			m[code] = key
		}
	}
	return m
})

// pageActions are the actions the page driver declares.
func pageActions() []protocol.Action {
	keys := pageKeys()
	out := make([]protocol.Action, 0, len(pageKeyCodes)+1)
	for _, code := range pageKeyCodes {
		if keys[code] == nil {
			continue
		}
		out = append(out, protocol.Action{Name: code, Kind: protocol.ActionButton, Description: "the " + code + " key (KeyboardEvent.code)"})
	}
	out = append(out, protocol.Action{Name: PagePointer, Kind: protocol.ActionPointer,
		Description: "the mouse: x, y in the pixels of the game's frames; pressed true/false presses or releases button (left, middle or right)"})
	return out
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

func (t *pageTab) key(code string, down bool) error {
	k := pageKeys()[code]
	if k == nil {
		return fmt.Errorf("no key %q", code)
	}
	t.mu.Lock()
	same := t.keys[code] == down
	t.keys[code] = down
	t.mu.Unlock()
	if same {
		return nil
	}
	p := input.DispatchKeyEventParams{Type: input.DispatchKeyEventTypeKeyUp, Code: k.Code, Key: k.Key, WindowsVirtualKeyCode: k.Windows, NativeVirtualKeyCode: k.Native}
	if down {
		p.Type = input.DispatchKeyEventTypeRawKeyDown
		if k.Print && k.Text != "" {
			p.Type, p.Text, p.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, k.Text, k.Unmodified
		}
	}
	if strings.HasSuffix(code, "Right") && (strings.HasPrefix(code, "Shift") || strings.HasPrefix(code, "Control") || strings.HasPrefix(code, "Alt")) {
		p.Location = 2
	} else if strings.HasSuffix(code, "Left") && (strings.HasPrefix(code, "Shift") || strings.HasPrefix(code, "Control") || strings.HasPrefix(code, "Alt")) {
		p.Location = 1
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
