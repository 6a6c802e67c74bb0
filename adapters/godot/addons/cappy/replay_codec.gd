extends RefCounted
## Cappy Godot replays: the input events of a freeform recording, each
## stamped with the game frame (counted from the recording's start, the
## first frame being 1) that first saw it: the event reached the game
## between that frame and the one before, as a player's key does. Also the
## RNG seed and the physics rate; for a recording an agent played in steps,
## the frames at which its steps ended ("steps"), where a replay with
## frames takes the same step pictures. Sent to the controller as an inline
## replay: base64 with its SHA-256, gzip-compressed when the JSON would
## pass the 1 MiB limit. Format v1 (the addon before frames were counted
## this way) stamped the frame before; it is read, one frame later.
##
## Input events are encoded field by field (never as serialized objects,
## so a replay cannot make the game instantiate anything): keys, actions,
## mouse buttons and motion, joypad buttons and motion, touch and drag.

const FORMAT := "cappy-godot/v2"
const FORMAT_GZIP := "cappy-godot/v2+gzip"
const FORMAT_V1 := "cappy-godot/v1"
const FORMAT_V1_GZIP := "cappy-godot/v1+gzip"
const MAX_INLINE_BYTES := 1 << 20
## A compressed replay may expand to at most this much.
const MAX_JSON_BYTES := 64 << 20
## The most steps an agent-played recording keeps.
const MAX_STEPS := 1 << 20


## Encodes an input event, or returns {} for a kind a replay cannot carry.
static func encode_event(e: InputEvent) -> Dictionary:
	var d := {}
	if e is InputEventKey:
		var k := e as InputEventKey
		d = {"k": "key", "keycode": k.keycode, "physical": k.physical_keycode, "label": k.key_label,
			"unicode": k.unicode, "pressed": k.pressed, "echo": k.echo}
	elif e is InputEventAction:
		var a := e as InputEventAction
		d = {"k": "action", "action": String(a.action), "pressed": a.pressed, "strength": a.strength}
	elif e is InputEventMouseButton:
		var b := e as InputEventMouseButton
		d = {"k": "mouse_button", "button": b.button_index, "pressed": b.pressed, "double": b.double_click,
			"factor": b.factor, "mask": b.button_mask, "x": b.position.x, "y": b.position.y}
	elif e is InputEventMouseMotion:
		var m := e as InputEventMouseMotion
		d = {"k": "mouse_motion", "mask": m.button_mask, "x": m.position.x, "y": m.position.y,
			"rx": m.relative.x, "ry": m.relative.y, "vx": m.velocity.x, "vy": m.velocity.y}
	elif e is InputEventJoypadButton:
		var j := e as InputEventJoypadButton
		d = {"k": "joy_button", "button": j.button_index, "pressed": j.pressed, "pressure": j.pressure}
	elif e is InputEventJoypadMotion:
		var jm := e as InputEventJoypadMotion
		d = {"k": "joy_motion", "axis": jm.axis, "value": jm.axis_value}
	elif e is InputEventScreenTouch:
		var t := e as InputEventScreenTouch
		d = {"k": "touch", "index": t.index, "pressed": t.pressed, "double": t.double_tap, "x": t.position.x, "y": t.position.y}
	elif e is InputEventScreenDrag:
		var g := e as InputEventScreenDrag
		d = {"k": "drag", "index": g.index, "x": g.position.x, "y": g.position.y, "rx": g.relative.x, "ry": g.relative.y}
	else:
		return {}
	d["device"] = e.device
	if e is InputEventWithModifiers:
		var w := e as InputEventWithModifiers
		var mods := int(w.shift_pressed) | int(w.ctrl_pressed) << 1 | int(w.alt_pressed) << 2 | int(w.meta_pressed) << 3
		if mods != 0:
			d["mods"] = mods
	return d


## Decodes an input event; null for one this codec does not know.
static func decode_event(d: Dictionary) -> InputEvent:
	var e: InputEvent = null
	match d.get("k"):
		"key":
			var k := InputEventKey.new()
			k.keycode = int(d.get("keycode", 0)) as Key
			k.physical_keycode = int(d.get("physical", 0)) as Key
			k.key_label = int(d.get("label", 0)) as Key
			k.unicode = int(d.get("unicode", 0))
			k.pressed = bool(d.get("pressed", false))
			k.echo = bool(d.get("echo", false))
			e = k
		"action":
			var a := InputEventAction.new()
			a.action = StringName(str(d.get("action", "")))
			a.pressed = bool(d.get("pressed", false))
			a.strength = float(d.get("strength", 1.0))
			e = a
		"mouse_button":
			var b := InputEventMouseButton.new()
			b.button_index = int(d.get("button", 0)) as MouseButton
			b.pressed = bool(d.get("pressed", false))
			b.double_click = bool(d.get("double", false))
			b.factor = float(d.get("factor", 1.0))
			b.button_mask = int(d.get("mask", 0)) as MouseButtonMask
			b.position = Vector2(float(d.get("x", 0)), float(d.get("y", 0)))
			b.global_position = b.position
			e = b
		"mouse_motion":
			var m := InputEventMouseMotion.new()
			m.button_mask = int(d.get("mask", 0)) as MouseButtonMask
			m.position = Vector2(float(d.get("x", 0)), float(d.get("y", 0)))
			m.global_position = m.position
			m.relative = Vector2(float(d.get("rx", 0)), float(d.get("ry", 0)))
			m.velocity = Vector2(float(d.get("vx", 0)), float(d.get("vy", 0)))
			e = m
		"joy_button":
			var j := InputEventJoypadButton.new()
			j.button_index = int(d.get("button", 0)) as JoyButton
			j.pressed = bool(d.get("pressed", false))
			j.pressure = float(d.get("pressure", 0))
			e = j
		"joy_motion":
			var jm := InputEventJoypadMotion.new()
			jm.axis = int(d.get("axis", 0)) as JoyAxis
			jm.axis_value = float(d.get("value", 0))
			e = jm
		"touch":
			var t := InputEventScreenTouch.new()
			t.index = int(d.get("index", 0))
			t.pressed = bool(d.get("pressed", false))
			t.double_tap = bool(d.get("double", false))
			t.position = Vector2(float(d.get("x", 0)), float(d.get("y", 0)))
			e = t
		"drag":
			var g := InputEventScreenDrag.new()
			g.index = int(d.get("index", 0))
			g.position = Vector2(float(d.get("x", 0)), float(d.get("y", 0)))
			g.relative = Vector2(float(d.get("rx", 0)), float(d.get("ry", 0)))
			e = g
		_:
			return null
	e.device = int(d.get("device", 0))
	if e is InputEventWithModifiers and d.has("mods"):
		var mods := int(d["mods"])
		var w := e as InputEventWithModifiers
		w.shift_pressed = mods & 1 != 0
		w.ctrl_pressed = mods & 2 != 0
		w.alt_pressed = mods & 4 != 0
		w.meta_pressed = mods & 8 != 0
	return e


## Builds the inline replay payload of a recording. Returns the payload,
## or {"error": String} when even compressed it passes 1 MiB.
static func to_payload(recording: Dictionary) -> Dictionary:
	var data := JSON.stringify(recording).to_utf8_buffer()
	var format := FORMAT
	if data.size() > MAX_INLINE_BYTES:
		data = data.compress(FileAccess.COMPRESSION_GZIP)
		format = FORMAT_GZIP
	if data.size() > MAX_INLINE_BYTES:
		return {"error": "the recording is %d bytes compressed, more than the %d an inline replay may hold" % [data.size(), MAX_INLINE_BYTES]}
	return {"kind": "inline", "encoding": "base64", "data": Marshalls.raw_to_base64(data),
		"sha256": sha256_hex(data), "format": format}


## Reads and checks a replay payload (inline, or a file this process can
## read): its SHA-256, format and content. Returns {"recording":
## Dictionary} or {"code", "message"}.
static func from_payload(r: Variant, game_id: String, ticks_per_second: int) -> Dictionary:
	if not (r is Dictionary):
		return _refusal("REPLAY_INVALID", "prepare_replay without replay")
	var data := PackedByteArray()
	match r.get("kind"):
		"inline":
			if r.get("encoding") != "base64" or not (r.get("data") is String):
				return _refusal("REPLAY_INVALID", "an inline replay must carry base64 data")
			data = Marshalls.base64_to_raw(r["data"])
			if data.size() > MAX_INLINE_BYTES:
				return _refusal("REPLAY_INVALID", "inline replay is %d bytes, more than %d" % [data.size(), MAX_INLINE_BYTES])
		"file":
			var path: Variant = r.get("path")
			var size := int(r.get("bytes", 0))
			if not (path is String) or size <= 0 or size > MAX_JSON_BYTES:
				return _refusal("REPLAY_INVALID", "a file replay needs a path and its size (at most %d bytes)" % MAX_JSON_BYTES)
			var f := FileAccess.open(path, FileAccess.READ)
			if f == null:
				return _refusal("REPLAY_INVALID", "cannot read replay file %s: %s" % [path, error_string(FileAccess.get_open_error())])
			data = f.get_buffer(size + 1)
			if data.size() != size:
				return _refusal("REPLAY_INVALID", "replay file %s is not %d bytes" % [path, size])
		_:
			return _refusal("REPLAY_INVALID", "replay.kind must be inline or file")
	var want := str(r.get("sha256", "")).to_lower()
	var got := sha256_hex(data)
	if got != want:
		return _refusal("REPLAY_INVALID", "replay SHA-256 is %s, expected %s" % [got, want])
	var format := str(r.get("format", FORMAT))
	if format == FORMAT_GZIP or format == FORMAT_V1_GZIP:
		data = data.decompress_dynamic(MAX_JSON_BYTES, FileAccess.COMPRESSION_GZIP)
	elif format != FORMAT and format != FORMAT_V1:
		return _refusal("REPLAY_UNSUPPORTED", "replay format %s is not %s" % [format, FORMAT])
	var rec: Variant = JSON.parse_string(data.get_string_from_utf8())
	if not (rec is Dictionary) or (rec.get("format") != FORMAT and rec.get("format") != FORMAT_V1):
		return _refusal("REPLAY_UNSUPPORTED", "not a %s replay" % FORMAT)
	var v1: bool = rec.get("format") == FORMAT_V1
	if rec.get("game") != game_id:
		return _refusal("REPLAY_UNSUPPORTED", "the replay is of game %s, this is %s" % [rec.get("game"), game_id])
	if int(rec.get("physicsTicksPerSecond", 0)) != ticks_per_second:
		return _refusal("REPLAY_INVALID", "the replay was recorded at %s physics ticks per second, the game runs %d" % [rec.get("physicsTicksPerSecond"), ticks_per_second])
	var ticks: Variant = rec.get("ticks")
	var inputs: Variant = rec.get("inputs")
	if not (ticks is float or ticks is int) or int(ticks) < 0 or not (inputs is Array):
		return _refusal("REPLAY_INVALID", "the replay lacks its ticks or inputs")
	var last := 0
	for i in range(inputs.size()):
		var item: Variant = inputs[i]
		if not (item is Array) or item.size() != 2 or not (item[0] is float or item[0] is int) or not (item[1] is Dictionary):
			return _refusal("REPLAY_INVALID", "replay input %d is not [frame, event]" % i)
		var frame := int(item[0])
		if v1:
			frame += 1
			item[0] = frame
		if frame < last or frame > int(ticks) + (1 if v1 else 0):
			return _refusal("REPLAY_INVALID", "replay input %d is at frame %d, out of order or past the end" % [i, frame])
		if decode_event(item[1]) == null:
			return _refusal("REPLAY_INVALID", "replay input %d is of an unknown kind" % i)
		last = frame
	var steps: Variant = rec.get("steps", [])
	if not (steps is Array) or steps.size() > MAX_STEPS:
		return _refusal("REPLAY_INVALID", "the replay's steps are not a list of at most %d physics frames" % MAX_STEPS)
	last = 0
	var ends: Array[int] = []
	for s: Variant in steps:
		if not (s is float or s is int) or int(s) < last or int(s) > int(ticks):
			return _refusal("REPLAY_INVALID", "the replay's step end %s is out of order or past the end" % s)
		last = int(s)
		ends.append(last)
	rec["steps"] = ends
	rec["ticks"] = int(ticks)
	rec["seed"] = int(rec.get("seed", 0))
	rec["format"] = FORMAT
	return {"recording": rec}


static func sha256_hex(data: PackedByteArray) -> String:
	var h := HashingContext.new()
	h.start(HashingContext.HASH_SHA256)
	if not data.is_empty():
		h.update(data)
	return h.finish().hex_encode()


static func _refusal(code: String, message: String) -> Dictionary:
	return {"code": code, "message": message}
