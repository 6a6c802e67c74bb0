extends Node
## Scenarios that misbehave, for the addon's tests; no freeform play and
## no cameras.

const CappyOperation := preload("res://addons/cappy/operation.gd")
const Codec := preload("res://addons/cappy/replay_codec.gd")

## The frames the engine has run, held or not (read by inspect
## "/root/Main:frames"): how fast the addon paces a held game.
var frames := 0


## Counts frames while the tree is paused too.
class FrameCounter extends Node:
	var probe: Node

	func _process(_delta: float) -> void:
		probe.frames = Engine.get_process_frames()


func _ready() -> void:
	print("cappy enabled=", Cappy.is_enabled())
	if OS.get_environment("PROBE_QUIT") == "1":
		get_tree().quit()
		return
	var counter := FrameCounter.new()
	counter.probe = self
	counter.process_mode = Node.PROCESS_MODE_ALWAYS
	add_child(counter)
	Cappy.register_scenario("script_error", _script_error, {"await": {"type": "boolean", "default": true}})
	Cappy.register_scenario("paused", _paused)
	Cappy.register_scenario("required", _required, {"level": {"type": "string", "required": true}})
	Cappy.register_scenario("codec", _codec)
	Cappy.register_scenario("tamper", _tamper)
	Cappy.connected.connect(_stall)


# PROBE_STALL_MS blocks the main thread as soon as the controller welcomed
# the game, as a slow first frame or a synchronous load would.
func _stall() -> void:
	var stall := int(OS.get_environment("PROBE_STALL_MS"))
	if stall > 0:
		OS.delay_msec(stall)
		print("STALL_OVER")


func _script_error(op: CappyOperation) -> void:
	op.emit_event("BEFORE")
	if op.params["await"]:
		await get_tree().physics_frame
	var missing: Variant = null
	missing.explode()
	op.emit_event("AFTER")


# Pauses the tree until the operation ends.
func _paused(op: CappyOperation) -> void:
	get_tree().paused = true
	op.emit_event("PAUSED")
	await op.ended
	get_tree().paused = false


func _required(op: CappyOperation) -> Dictionary:
	return {"level": op.params["level"]}


# Every kind of input event a replay carries, through the replay codec and
# JSON as on the wire, comes back the same.
func _codec(op: CappyOperation) -> void:
	var key := InputEventKey.new()
	key.keycode = KEY_A
	key.physical_keycode = KEY_A
	key.unicode = 97
	key.pressed = true
	key.shift_pressed = true
	var button := InputEventMouseButton.new()
	button.button_index = MOUSE_BUTTON_LEFT
	button.pressed = true
	button.position = Vector2(10.5, 20)
	var motion := InputEventMouseMotion.new()
	motion.position = Vector2(3, 4)
	motion.relative = Vector2(1, -1)
	motion.ctrl_pressed = true
	var joy := InputEventJoypadButton.new()
	joy.button_index = JOY_BUTTON_A
	joy.pressed = true
	joy.device = 1
	var axis := InputEventJoypadMotion.new()
	axis.axis = JOY_AXIS_LEFT_X
	axis.axis_value = -0.5
	var touch := InputEventScreenTouch.new()
	touch.index = 2
	touch.pressed = true
	touch.position = Vector2(5, 6)
	var drag := InputEventScreenDrag.new()
	drag.index = 1
	drag.position = Vector2(7, 8)
	drag.relative = Vector2(2, 2)
	var action := InputEventAction.new()
	action.action = &"jump"
	action.pressed = true
	action.strength = 0.5
	for e: InputEvent in [key, button, motion, joy, axis, touch, drag, action]:
		var wire := JSON.stringify(Codec.encode_event(e))
		var back := Codec.decode_event(JSON.parse_string(wire))
		if back == null or back.get_class() != e.get_class() or back.as_text() != e.as_text() or JSON.stringify(Codec.encode_event(back)) != wire:
			op.fail("CODEC", "%s came back as %s: %s" % [e.as_text(), back.as_text() if back else "null", wire])
			return
		op.emit_event("SAME", {"kind": e.get_class()})


# Sets Engine.time_scale itself a few physics frames in: at another
# timeScale that is no longer the same simulation.
func _tamper(op: CappyOperation) -> Dictionary:
	for i in range(3):
		await get_tree().physics_frame
	Engine.time_scale = 1.0
	for i in range(5):
		await get_tree().physics_frame
	op.emit_event("DONE", {"timeScale": Engine.time_scale, "ticks": Engine.physics_ticks_per_second})
	return {}
