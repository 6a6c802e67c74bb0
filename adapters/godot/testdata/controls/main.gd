extends Node2D
## Every kind of action an agent can use, reported as the game sees it:
## each physics frame in which the polled input changed (INPUT), and from
## _input each jump (JUMP), mouse button (CLICK) and typed character
## (TYPED). Jump is bound to the space bar too.

const CappyOperation := preload("res://addons/cappy/operation.gd")

## What was typed since the play began (inspect: .:typed).
var typed := ""
## Where the pointer is, as _input saw it.
var pointer := Vector2.ZERO
## Over 256 KiB as JSON, for inspect's limit (big:0 is small).
var big: Array[String] = []
## Whether a player's space bar (the keyboard, device 0) presses jump.
var space_jumps: bool:
	get:
		var space := InputEventKey.new()
		space.keycode = KEY_SPACE
		space.pressed = true
		space.device = 0
		return InputMap.event_is_action(space, "jump")

var _last := {}
var _op: CappyOperation


func _ready() -> void:
	# The last three have names no action may have on the wire: left out.
	for action: String in ["jump", "left", "right", "up", "down", "brake", "gas", "secret", " padded", "two  spaces", "tab\there"]:
		InputMap.add_action(action, 0.0)
	Cappy.add_axis("throttle", "brake", "gas")
	Cappy.add_axis2d("stick", "left", "right", "up", "down", "the stick")
	Cappy.add_pointer()
	Cappy.add_text()
	Cappy.hide_action("secret")
	var space := InputEventKey.new()
	space.keycode = KEY_SPACE
	InputMap.action_add_event("jump", space)
	Cappy.describe_action("jump", "jumps")
	Cappy.set_freeform(_start)
	for i in range(300):
		big.append("x".repeat(1000))


func _start(op: CappyOperation) -> void:
	_op = op
	typed = ""
	_last = {}


func _physics_process(_delta: float) -> void:
	if _op == null or not _op.is_active():
		return
	var stick := Input.get_vector("left", "right", "up", "down", 0.0)
	var now := {"jump": Input.is_action_pressed("jump"), "jumped": Input.is_action_just_pressed("jump"),
		"throttle": snappedf(Input.get_axis("brake", "gas"), 0.001),
		"x": snappedf(stick.x, 0.001), "y": snappedf(stick.y, 0.001)}
	if now != _last:
		_op.emit_event("INPUT", now)
		_last = now


func _input(event: InputEvent) -> void:
	if _op == null or not _op.is_active():
		return
	if event.is_action_pressed("jump"):
		_op.emit_event("JUMP")
	if event is InputEventMouseMotion:
		pointer = (event as InputEventMouseMotion).position
	elif event is InputEventMouseButton:
		var b := event as InputEventMouseButton
		_op.emit_event("CLICK", {"button": b.button_index, "pressed": b.pressed, "x": b.position.x, "y": b.position.y})
	elif event is InputEventKey and (event as InputEventKey).pressed and (event as InputEventKey).unicode != 0:
		typed += char((event as InputEventKey).unicode)
		_op.emit_event("TYPED", {"text": typed})
