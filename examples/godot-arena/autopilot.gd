extends Node
## A stand-in player for machines without one: it presses and releases the
## arena's input actions through Input.parse_input_event, exactly as a
## keyboard would reach the game, so a recording captures it as input.
## Like a player looking at the screen, it mostly heads for the nearest foe.

const MOVES := ["move_left", "move_right", "move_up", "move_down"]

var _rng := RandomNumberGenerator.new()
var _held := ""
var _attack_held := false
var _aim: Callable


## aim returns the direction of the nearest foe (or Vector2.ZERO).
func _init(rng_seed: int, aim: Callable) -> void:
	_rng.seed = rng_seed ^ 0x5bd1e995
	_aim = aim


func _physics_process(_delta: float) -> void:
	if _attack_held:
		_send("attack", false)
		_attack_held = false
	var x := _rng.randf()
	if x < 0.08:
		if _held != "":
			_send(_held, false)
		_held = _toward(_aim.call()) if _rng.randf() < 0.7 else MOVES[_rng.randi() % MOVES.size()]
		_send(_held, true)
	elif x < 0.2:
		_send("attack", true)
		_attack_held = true
	elif x < 0.205:
		_send("dodge", true)
		_send("dodge", false)


func _toward(direction: Vector2) -> String:
	if direction == Vector2.ZERO:
		return MOVES[_rng.randi() % MOVES.size()]
	if absf(direction.x) > absf(direction.y):
		return "move_right" if direction.x > 0 else "move_left"
	return "move_down" if direction.y > 0 else "move_up"


func _exit_tree() -> void:
	if _held != "":
		_send(_held, false)


func _send(action: String, pressed: bool) -> void:
	var e := InputEventAction.new()
	e.action = action
	e.pressed = pressed
	Input.parse_input_event(e)
