extends RefCounted
## The checks the controller makes, made again before answering ready:
## scenario parameters (types, enum, minimum, maximum, required, defaults)
## and the presentation keys Cappy defines. Each returns "" when the value
## passes, else what is wrong.

const TYPES: PackedStringArray = ["string", "number", "integer", "boolean"]
const MIN_TIME_SCALE := 0.1
const MAX_TIME_SCALE := 4.0


## Checks a parameter description of the registry (at registration).
static func check_description(name: String, p: Dictionary) -> String:
	if not (p.get("type") is String) or not TYPES.has(p["type"]):
		return "parameter %s: type must be one of %s" % [name, ", ".join(TYPES)]
	for key: String in p.keys():
		if not ["type", "description", "required", "default", "enum", "minimum", "maximum"].has(key):
			return "parameter %s: unknown key %s" % [name, key]
	if p.has("minimum") and not _is_number(p["minimum"]):
		return "parameter %s: minimum must be a number" % name
	if p.has("maximum") and not _is_number(p["maximum"]):
		return "parameter %s: maximum must be a number" % name
	if p.has("minimum") and p.has("maximum") and float(p["minimum"]) > float(p["maximum"]):
		return "parameter %s: minimum is above maximum" % name
	if p.has("enum") and not (p["enum"] is Array):
		return "parameter %s: enum must be an array" % name
	if p.has("default"):
		var why := check_value(name, p, p["default"])
		if why != "":
			return "parameter %s: default: %s" % [name, why]
	return ""


## Checks one value against its parameter description, as the controller's
## protocol.CheckParameter does.
static func check_value(name: String, p: Dictionary, v: Variant) -> String:
	match p["type"]:
		"string":
			if not (v is String):
				return "%s must be a string" % name
		"boolean":
			if not (v is bool):
				return "%s must be a boolean" % name
		"number", "integer":
			if not _is_number(v):
				return "%s must be a number" % name
			var f := float(v)
			if p["type"] == "integer" and f != floorf(f):
				return "%s must be an integer" % name
			if p.has("minimum") and f < float(p["minimum"]):
				return "%s must be at least %s" % [name, p["minimum"]]
			if p.has("maximum") and f > float(p["maximum"]):
				return "%s must be at most %s" % [name, p["maximum"]]
	if p.has("enum") and not (p["enum"] as Array).is_empty():
		var found := false
		for e: Variant in p["enum"]:
			if typeof(e) == typeof(v) and e == v or _is_number(e) and _is_number(v) and float(e) == float(v):
				found = true
				break
		if not found:
			return "%s must be one of %s" % [name, JSON.stringify(p["enum"])]
	return ""


## Resolves a scenario's arguments: every one known and valid, defaults
## filled in, required ones present; integers become int. Returns
## {"params": Dictionary} or {"error": String}.
static func resolve(scenario_id: String, parameters: Dictionary, args: Dictionary) -> Dictionary:
	var out := {}
	for name: Variant in args.keys():
		if not parameters.has(name):
			return {"error": "%s: scenario %s has no parameter %s" % [name, scenario_id, name]}
		var why := check_value(name, parameters[name], args[name])
		if why != "":
			return {"error": why}
		out[name] = args[name]
	for name: String in parameters.keys():
		if out.has(name):
			continue
		var p: Dictionary = parameters[name]
		if p.has("default"):
			out[name] = p["default"]
		elif p.get("required", false):
			return {"error": "%s: required by scenario %s" % [name, scenario_id]}
	for name: String in out.keys():
		if parameters[name]["type"] == "integer":
			out[name] = int(out[name])
	return {"params": out}


## Checks presentation.timeScale and presentation.camera, as the
## controller's protocol.Presentation.Check does. has_capability is
## called with a capability name. Returns {} or {"code", "message"}.
static func check_presentation(p: Dictionary, has_capability: Callable) -> Dictionary:
	if p.has("timeScale"):
		var v: Variant = p["timeScale"]
		if not _is_number(v):
			return _refusal("PRESENTATION_UNSUPPORTED", "presentation.timeScale must be a number from %s to %s, got a %s" % [MIN_TIME_SCALE, MAX_TIME_SCALE, type_string(typeof(v))])
		if not (float(v) >= MIN_TIME_SCALE and float(v) <= MAX_TIME_SCALE):
			return _refusal("PRESENTATION_UNSUPPORTED", "presentation.timeScale must be a number from %s to %s, got %s" % [MIN_TIME_SCALE, MAX_TIME_SCALE, v])
		if not has_capability.call("time_scale"):
			return _refusal("CAPABILITY_MISSING", "presentation.timeScale needs capability \"time_scale\", which the adapter does not advertise")
	if p.has("camera"):
		var c: Variant = p["camera"]
		if not (c is String) or (c as String).is_empty():
			return _refusal("PRESENTATION_UNSUPPORTED", "presentation.camera must be a camera name")
		if not has_capability.call("alternate_cameras"):
			return _refusal("CAPABILITY_MISSING", "presentation.camera needs capability \"alternate_cameras\", which the adapter does not advertise")
	return {}


## Checks a frames request (spec section 7): fps from 0.1 to 30, maxWidth
## a positive number, formats offering image/jpeg or image/png. Returns
## {"fps", "max_width", "mime"} or {"error": String}.
static func check_frames(f: Variant) -> Dictionary:
	if not (f is Dictionary):
		return {"error": "frames must be an object"}
	var fps: Variant = f.get("fps")
	if not _is_number(fps) or float(fps) < 0.1 or float(fps) > 30.0:
		return {"error": "frames.fps must be a number from 0.1 to 30"}
	var width: Variant = f.get("maxWidth", 640)
	if not _is_number(width) or float(width) < 1.0:
		return {"error": "frames.maxWidth must be a positive number"}
	var formats: Variant = f.get("formats", ["image/jpeg"])
	var mime := ""
	if formats is Array:
		for m: Variant in formats:
			if m is String and (m == "image/jpeg" or m == "image/png"):
				mime = m
				break
	if mime == "":
		return {"error": "frames.formats offers neither image/jpeg nor image/png"}
	return {"fps": float(fps), "max_width": int(width), "mime": mime}


static func _is_number(v: Variant) -> bool:
	return (v is int or v is float) and not is_nan(float(v)) and not is_inf(float(v))


static func _refusal(code: String, message: String) -> Dictionary:
	return {"code": code, "message": message}
