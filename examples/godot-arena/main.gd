extends Node2D
## Godot Arena, wired to crosscode-mcp through the Cappy addon: authored
## scenarios with parameters, freeform play that records and replays
## exactly, and two cameras. Played by hand, it is an endless arena: move
## with the arrow keys or WASD, attack with space, dodge with shift.

const CappyOperation := preload("res://addons/cappy/operation.gd")
const World := preload("res://world.gd")
const Autopilot := preload("res://autopilot.gd")

const HEROES := ["knight", "rogue", "mage"]

var _autopilot: Autopilot

@onready var _world: World = $World


func _ready() -> void:
	# What an agent plays with (crosscode-mcp's step_game): the project's
	# InputMap (Project Settings > Input Map), the four moves joined into
	# one axis2d.
	Cappy.add_axis2d("move", "move_left", "move_right", "move_up", "move_down",
		"walk: x -1 (left) to 1 (right), y -1 (up) to 1 (down); 3 px per physics frame at full tilt, held until changed")
	Cappy.describe_action("attack", "swing at the nearest foe within 44 px, once per press: send pressed false then true to swing again (12 physics frames of cooldown)")
	Cappy.describe_action("dodge", "dash at double speed for 18 physics frames, untouchable, once per press (1 s cooldown)")
	_world.happened.connect(_on_world_happened)
	Cappy.register_scenario("boss_fight", _boss_fight, {
		"difficulty": {"type": "integer", "minimum": 1, "maximum": 3, "default": 2, "description": "1 (easy) to 3 (hard)"},
		"hero": {"type": "string", "enum": HEROES, "default": "knight", "description": "the hero's class"},
	}, {"name": "Boss fight", "description": "A scripted hero fights the golem and its three phases."})
	Cappy.register_scenario("survive", _survive, {
		"waves": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
		"hp": {"type": "integer", "minimum": 1, "maximum": 500, "default": 160, "description": "the hero's health"},
	}, {"name": "Survive", "description": "A scripted knight holds out for some waves; fails with HERO_DOWN if it falls."})
	Cappy.register_scenario("load_level", _load_level, {
		"ms": {"type": "integer", "minimum": 0, "maximum": 20000, "default": 500, "description": "how long the load blocks the main thread"},
	}, {"name": "Load level", "description": "A synchronous load that blocks the main thread, then LEVEL_LOADED."})
	Cappy.register_scenario("stress", _stress, {
		"events": {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 1000},
	}, {"name": "Stress", "description": "Emits many tiny events as fast as possible (benchmarks)."})
	Cappy.set_freeform(_start_freeform)
	Cappy.register_camera("overview", $Overview)
	Cappy.register_camera("follow", $World/Follow)
	if not Cappy.is_enabled():
		_world.reset(randi(), World.Mode.ARENA, "knight")
		_world.running = true


func _boss_fight(op: CappyOperation) -> Dictionary:
	_world.reset(_seed_of(op), World.Mode.BOSS, op.params["hero"], op.params["difficulty"])
	return await _fight(op)


func _survive(op: CappyOperation) -> Dictionary:
	_world.reset(_seed_of(op), World.Mode.SURVIVE, "knight", 1, op.params["waves"], op.params["hp"])
	var summary := await _fight(op)
	if summary["outcome"] == "defeat":
		op.fail("HERO_DOWN", "the hero fell after %d ms" % roundi(op.sim_time_ms()))
	return summary


func _fight(op: CappyOperation) -> Dictionary:
	_world.scripted = true
	_world.running = true
	op.ended.connect(func(_status: String) -> void: _world.halt())
	var outcome: String = await _world.finished
	return {"outcome": outcome, "ticks": _world.tick}


func _load_level(op: CappyOperation) -> Dictionary:
	op.emit_event("LEVEL_LOAD", {"ms": op.params["ms"]})
	OS.delay_msec(op.params["ms"]) # stands for a synchronous load
	await get_tree().physics_frame
	op.emit_event("LEVEL_LOADED", {"ms": op.params["ms"]})
	return {"loadedMs": op.params["ms"]}


func _stress(op: CappyOperation) -> Dictionary:
	for i in range(op.params["events"]):
		if not op.emit_event("STRESS", {"i": i}):
			break
	return {}


# Freeform play (a recording, or the replay of one) starts from a fresh
# arena seeded by the operation. While recording, the autopilot plays when
# ARENA_AUTOPILOT=1 (CI has no player), unless an agent plays.
func _start_freeform(op: CappyOperation) -> void:
	_world.reset(op.rng_seed, World.Mode.ARENA, HEROES[op.rng_seed % HEROES.size()])
	_world.scripted = false
	_world.running = true
	op.ended.connect(func(_status: String) -> void: _world.halt())
	if op.kind == "recording" and op.control != "agent" and OS.get_environment("ARENA_AUTOPILOT") == "1":
		_autopilot = Autopilot.new(op.rng_seed, _world.aim)
		add_child(_autopilot)
		op.ended.connect(func(_status: String) -> void: _autopilot.queue_free())


func _on_world_happened(event: String, payload: Dictionary, duration_ms: float) -> void:
	var op := Cappy.current_operation()
	if op != null:
		op.emit_event(event, payload, duration_ms)


func _seed_of(op: CappyOperation) -> int:
	return hash(op.scenario + JSON.stringify(op.params)) & 0x7fffffff
