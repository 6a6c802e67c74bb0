extends RefCounted
## The actions an agent may use (spec section 11), built from the
## project's InputMap, and the input events a step's actions become.
##
## Every InputMap action is a button, less Godot's built-in ui_* actions,
## the ones the game hides and the parts of its axes. The game may join
## actions into an axis (two actions, as Input.get_axis reads them) or an
## axis2d (four, as Input.get_vector reads them), and offer a pointer
## (mouse events) and text (key events). A step's actions become input
## events, which the addon injects with Input.parse_input_event between two
## frames, where a replay injects them again:
##
## - a button is pressed as a player presses it: with the first key its
##   InputMap action is bound to (else its first joypad button, else an
##   InputEventAction), so _input, _unhandled_input and GUI shortcuts see
##   that key, and the action is pressed through the InputMap. The events
##   come from AGENT_DEVICE, the device the addon binds the actions to while
##   an agent plays (a player's own keys then press nothing). A button is
##   only pressed or released when it changes, as a key is.
## - an axis or axis2d: InputEventAction with its strength;
## - the pointer: InputEventMouseMotion and InputEventMouseButton;
## - text: InputEventKey per character (from the keyboard's device: typed
##   text presses no action).

## The most actions in one step, and the longest text (as the controller
## checks them).
const MAX_STEP_ACTIONS := 64
const MAX_TEXT_BYTES := 4096
const MAX_NAME_BYTES := 128
const MAX_DESCRIPTION_BYTES := 1024
const MAX_ACTIONS := 256
const POINTER_BUTTONS := {"left": MOUSE_BUTTON_LEFT, "right": MOUSE_BUTTON_RIGHT, "middle": MOUSE_BUTTON_MIDDLE}
## The device of the agent's keys and joypad buttons, to which the
## game's actions are bound while an agent plays (or its play replays).
const AGENT_DEVICE := 0x43415050

var _descriptions := {} # InputMap action -> description
var _hidden := {} # InputMap action -> true
var _axes := {} # name -> {"kind": "axis" | "axis2d", "parts": Array[String], "description"}
var _pointer := {} # {"name", "description"} when offered
var _text := {} # {"name", "description"} when offered
var _pointer_position := Vector2.ZERO
var _pointer_mask := 0
var _buttons := {} # button action -> pressed, as the agent set it


## Gives an InputMap action a description for agents.
func describe(action: String, description: String) -> void:
	_descriptions[action] = description


## Leaves an InputMap action out of the list.
func hide(action: String) -> void:
	_hidden[action] = true


## Offers an axis (kind "axis", parts [negative, positive]) or an axis2d
## (parts [negative_x, positive_x, negative_y, positive_y]) of InputMap
## actions under name.
func add_axis(name: String, kind: String, parts: Array[String], description: String) -> void:
	_axes[name] = {"kind": kind, "parts": parts, "description": description}


## Offers the pointer (mouse) under name.
func add_pointer(name: String, description: String) -> void:
	_pointer = {"name": name, "description": description}


## Offers typing under name.
func add_text(name: String, description: String) -> void:
	_text = {"name": name, "description": description}


## The actions message's list: [{name, kind, description}], in a stable
## order (axes, buttons in InputMap order, pointer, text).
func catalogue(view: Vector2i) -> Array:
	var list: Array = []
	var parts := {}
	for name: String in _axes:
		var a: Dictionary = _axes[name]
		if not _all_mapped(a["parts"]):
			continue
		for p: String in a["parts"]:
			parts[p] = true
		var d: String = a["description"]
		if d.is_empty():
			d = _axis_description(a)
		list.append(_entry(name, a["kind"], d))
	for action: StringName in InputMap.get_actions():
		var name := String(action)
		if name.begins_with("ui_") or _hidden.has(name) or parts.has(name) or _axes.has(name):
			continue
		list.append(_entry(name, "button", _descriptions.get(name, _bindings(name))))
	if not _pointer.is_empty() and not _hidden.has(_pointer["name"]):
		var d: String = _pointer["description"]
		if d.is_empty():
			d = "the mouse: x, y in the pixels of the game's frames (%d x %d at full size); button left (default), right or middle; pressed true holds it, false releases it (a click: both, in one step), omitted leaves the buttons as they are" % [view.x, view.y]
		list.append(_entry(_pointer["name"], "pointer", d))
	if not _text.is_empty() and not _hidden.has(_text["name"]):
		var d: String = _text["description"]
		if d.is_empty():
			d = "types text: each character is a key press and release"
		list.append(_entry(_text["name"], "text", d))
	var out: Array = []
	var seen := {}
	for e: Dictionary in list:
		var n: String = e["name"]
		if seen.has(n) or not _clean_name(n):
			continue
		seen[n] = true
		out.append(e)
		if out.size() == MAX_ACTIONS:
			break
	return out


## Turns a step's actions into input events, checking each against the
## catalogue. view is the root viewport's size, frame_width the width of
## the operation's frames (their pixels are the pointer's; 0: none asked).
## Returns {"events": Array[InputEvent]} or {"error": String}.
func build(inputs: Variant, view: Vector2i, frame_width: int) -> Dictionary:
	if not (inputs is Array):
		return {"error": "actions must be an array"}
	if (inputs as Array).size() > MAX_STEP_ACTIONS:
		return {"error": "%d actions in one step, at most %d" % [inputs.size(), MAX_STEP_ACTIONS]}
	var kinds := {}
	for e: Dictionary in catalogue(view):
		kinds[e["name"]] = e["kind"]
	var events: Array[InputEvent] = []
	var position := _pointer_position
	var mask := _pointer_mask
	var buttons := _buttons.duplicate()
	for i in range((inputs as Array).size()):
		var a: Variant = inputs[i]
		var where := "actions[%d]" % i
		if not (a is Dictionary) or not (a.get("name") is String):
			return {"error": "%s must be an object with a name" % where}
		var name: String = a["name"]
		if not kinds.has(name):
			return {"error": "%s: unknown action %s; the game's actions are %s" % [where, JSON.stringify(name), ", ".join(PackedStringArray(kinds.keys()))]}
		var kind: String = kinds[name]
		var allowed: Array = {"button": ["pressed"], "axis": ["value"], "axis2d": ["x", "y"],
			"pointer": ["x", "y", "button", "pressed"], "text": ["text"]}[kind]
		for key: Variant in a.keys():
			if key != "name" and not allowed.has(key):
				return {"error": "%s: a %s action has no %s" % [where, kind, key]}
		match kind:
			"button":
				if not (a.get("pressed") is bool):
					return {"error": "%s: pressed (true or false) is required for button %s" % [where, name]}
				var pressed: bool = a["pressed"]
				if bool(buttons.get(name, false)) != pressed:
					buttons[name] = pressed
					events.append(_button_event(name, pressed))
			"axis":
				var v := _unit(a, "value")
				if is_nan(v):
					return {"error": "%s: value must be a number from -1 to 1 for axis %s, got %s" % [where, name, JSON.stringify(a.get("value"))]}
				var p: Array = _axes[name]["parts"]
				events.append_array(_axis_events(p[0], p[1], v))
			"axis2d":
				var x := _unit(a, "x")
				var y := _unit(a, "y")
				if is_nan(x) or is_nan(y):
					return {"error": "%s: x and y must be numbers from -1 to 1 for axis2d %s, got %s, %s" % [where, name, JSON.stringify(a.get("x")), JSON.stringify(a.get("y"))]}
				var p: Array = _axes[name]["parts"]
				events.append_array(_axis_events(p[0], p[1], x))
				events.append_array(_axis_events(p[2], p[3], y))
			"pointer":
				var fw := frame_width if frame_width > 0 else view.x
				var fh := roundi(view.y * float(fw) / view.x) if view.x > 0 else view.y
				var px: Variant = a.get("x")
				var py: Variant = a.get("y")
				if not _is_number(px) or not _is_number(py) or float(px) < 0 or float(px) > fw or float(py) < 0 or float(py) > fh:
					return {"error": "%s: x and y must be numbers within the game's frames, 0..%d and 0..%d, got %s, %s" % [where, fw, fh, JSON.stringify(px), JSON.stringify(py)]}
				var button_name: Variant = a.get("button", "left")
				if not (button_name is String) or not POINTER_BUTTONS.has(button_name):
					return {"error": "%s: button must be left, right or middle, got %s" % [where, JSON.stringify(button_name)]}
				if a.has("pressed") and not (a["pressed"] is bool):
					return {"error": "%s: pressed must be true or false" % where}
				var at := Vector2(float(px), float(py)) * (float(view.x) / fw)
				var motion := InputEventMouseMotion.new()
				motion.position = at
				motion.global_position = at
				motion.relative = at - position
				motion.button_mask = mask
				events.append(motion)
				position = at
				# pressed sets the button's state (a button event when it
				# changes); omitted, the buttons stay as they are.
				if a.has("pressed"):
					var button := int(POINTER_BUTTONS[button_name]) as MouseButton
					var bit := 1 << (button - 1)
					var pressed: bool = a["pressed"]
					if pressed != (mask & bit != 0):
						mask = (mask | bit) if pressed else (mask & ~bit)
						var b := InputEventMouseButton.new()
						b.button_index = button
						b.pressed = pressed
						b.button_mask = mask
						b.position = at
						b.global_position = at
						events.append(b)
			"text":
				# No text (the controller leaves an empty one out) types nothing.
				var text: Variant = a.get("text", "")
				if not (text is String) or (text as String).to_utf8_buffer().size() > MAX_TEXT_BYTES:
					return {"error": "%s: text must be a string of at most %d bytes" % [where, MAX_TEXT_BYTES]}
				for c in (text as String):
					for pressed: bool in [true, false]:
						var k := InputEventKey.new()
						k.unicode = c.unicode_at(0) if pressed else 0
						k.keycode = _keycode(c)
						k.physical_keycode = k.keycode
						k.key_label = k.keycode
						k.pressed = pressed
						events.append(k)
	# Accepted: the step's input is what the agent holds from now on (a
	# look's too, though it goes in with the next step that runs).
	_pointer_position = position
	_pointer_mask = mask
	_buttons = buttons
	return {"events": events}


## The releases of the buttons the agent holds (the keys it let go when
## the play ends).
func release_events() -> Array[InputEvent]:
	var out: Array[InputEvent] = []
	for name: String in _buttons:
		if _buttons[name] and InputMap.has_action(name):
			out.append(_button_event(name, false))
	return out


## Releases every action an agent can hold, and forgets the pointer.
func release_all() -> void:
	for action: StringName in InputMap.get_actions():
		if not String(action).begins_with("ui_") and Input.is_action_pressed(action):
			Input.action_release(action)
	_pointer_position = Vector2.ZERO
	_pointer_mask = 0
	_buttons = {}


func _entry(name: String, kind: String, description: String) -> Dictionary:
	var d := ""
	for c in description:
		var u := c.unicode_at(0)
		if u >= 32 and (u < 127 or u > 159) or c == "\n" or c == "\t":
			d += c
	while d.to_utf8_buffer().size() > MAX_DESCRIPTION_BYTES:
		d = d.left(d.length() - 16)
	return {"name": name, "kind": kind, "description": d}


# Whether name can be an action's name on the wire: 1 to 128 bytes, no
# control characters, no white space but single inner spaces.
static func _clean_name(n: String) -> bool:
	if n.is_empty() or n.to_utf8_buffer().size() > MAX_NAME_BYTES or n.strip_edges() != n or n.contains("  "):
		return false
	for c in n:
		var u := c.unicode_at(0)
		if u < 32 or (u >= 127 and u <= 159) or (c != " " and c.strip_edges().is_empty()):
			return false
	return true


func _all_mapped(parts: Array) -> bool:
	for p: String in parts:
		if not InputMap.has_action(p):
			return false
	return true


func _axis_description(a: Dictionary) -> String:
	var p: Array = a["parts"]
	if a["kind"] == "axis":
		return "value -1 (%s) to 1 (%s); held until changed" % [p[0], p[1]]
	return "x -1 (%s) to 1 (%s), y -1 (%s) to 1 (%s); held until changed" % [p[0], p[1], p[2], p[3]]


# The keys (and buttons) an action is bound to, as its default description.
func _bindings(action: String) -> String:
	var names: PackedStringArray = []
	for e: InputEvent in InputMap.action_get_events(action):
		if e is InputEventKey:
			var k := e as InputEventKey
			names.append(OS.get_keycode_string(k.keycode if k.keycode != KEY_NONE else k.physical_keycode))
		else:
			names.append(e.as_text())
	var bound := (" (%s)" % ", ".join(names)) if not names.is_empty() else ""
	return "button%s: pressed true holds it, false releases it" % bound


# A button's press or release, as a player makes it: its first key (else
# joypad button) from AGENT_DEVICE, else the action itself.
func _button_event(action: String, pressed: bool) -> InputEvent:
	for e: InputEvent in InputMap.action_get_events(action):
		if e is InputEventKey:
			var bound := e as InputEventKey
			var k := InputEventKey.new()
			k.keycode = bound.keycode if bound.keycode != KEY_NONE else bound.physical_keycode
			k.physical_keycode = bound.physical_keycode if bound.physical_keycode != KEY_NONE else bound.keycode
			k.key_label = bound.key_label if bound.key_label != KEY_NONE else k.keycode
			k.location = bound.location
			k.shift_pressed = bound.shift_pressed
			k.ctrl_pressed = bound.ctrl_pressed
			k.alt_pressed = bound.alt_pressed
			k.meta_pressed = bound.meta_pressed
			k.pressed = pressed
			k.device = AGENT_DEVICE
			return k
	for e: InputEvent in InputMap.action_get_events(action):
		if e is InputEventJoypadButton:
			var j := InputEventJoypadButton.new()
			j.button_index = (e as InputEventJoypadButton).button_index
			j.pressed = pressed
			j.pressure = 1.0 if pressed else 0.0
			j.device = AGENT_DEVICE
			return j
	return _action_event(action, pressed, 1.0)


func _action_event(action: String, pressed: bool, strength: float) -> InputEventAction:
	var e := InputEventAction.new()
	e.action = action
	e.pressed = pressed
	e.strength = strength if pressed else 0.0
	return e


func _axis_events(negative: String, positive: String, v: float) -> Array[InputEvent]:
	return [_action_event(negative, v < 0.0, -v), _action_event(positive, v > 0.0, v)]


static func _unit(a: Dictionary, key: String) -> float:
	var v: Variant = a.get(key)
	if not _is_number(v) or float(v) < -1.0 or float(v) > 1.0:
		return NAN
	return float(v)


static func _is_number(v: Variant) -> bool:
	return (v is int or v is float) and not is_nan(float(v)) and not is_inf(float(v))


static func _keycode(c: String) -> Key:
	var u := c.to_upper()
	if u.length() == 1 and u >= "A" and u <= "Z" or c >= "0" and c <= "9":
		return u.unicode_at(0) as Key
	match c:
		" ":
			return KEY_SPACE
		"\n":
			return KEY_ENTER
		"\t":
			return KEY_TAB
	return KEY_NONE
