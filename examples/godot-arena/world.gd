extends Node2D
## Godot Arena's world: a hero, waves of foes and a boss in a walled arena.
##
## The simulation advances one fixed step per physics frame while running,
## driven only by its seeded random number generator and the hero's
## intent: the player's input actions, or a scripted fighter. The same seed
## and the same input at the same physics frames give the same events.

## Something worth reporting happened: an event name, its payload and how
## long it lasts in simulated ms (-1: a moment).
signal happened(event: String, payload: Dictionary, duration_ms: float)
## The fight is over: "victory", "defeat" or "stopped".
signal finished(outcome: String)

enum Mode { ARENA, BOSS, SURVIVE }

const SIZE := Vector2(640, 360)
const TICK_MS := 1000.0 / 60.0
const HERO_SPEED := 3.0
const HERO_DAMAGE := 12
const HERO_REACH := 44.0
const ATTACK_TICKS := 12
const DODGE_TICKS := 18
const DODGE_COOLDOWN_TICKS := 60
const RESPAWN_TICKS := 90
const HEROES := {
	"knight": {"hp": 160, "damage": 1.2, "color": Color(0.55, 0.7, 1.0)},
	"rogue": {"hp": 110, "damage": 1.0, "color": Color(0.5, 1.0, 0.6)},
	"mage": {"hp": 90, "damage": 1.5, "color": Color(0.9, 0.6, 1.0)},
}
const FOES := {
	"slime": {"hp": 24, "speed": 1.1, "damage": 4, "reach": 22.0, "cooldown": 40, "color": Color(0.4, 0.9, 0.3)},
	"skeleton": {"hp": 34, "speed": 1.5, "damage": 6, "reach": 26.0, "cooldown": 50, "color": Color(0.9, 0.9, 0.85)},
	"golem": {"hp": 0, "speed": 0.8, "damage": 10, "reach": 36.0, "cooldown": 55, "color": Color(0.8, 0.45, 0.25)},
}

## Whether the simulation steps.
var running := false
## Whether the scripted fighter, not the player, controls the hero.
var scripted := false
## Simulation steps since the last reset.
var tick := 0
var mode := Mode.ARENA
var outcome := ""
## The hero, for inspect (World:hero, World:hero:hp): id, kind, pos, hp,
## max_hp, cooldown, facing and its dodge and respawn ticks.
var hero: Dictionary:
	get:
		return _hero
## The foes alive, for inspect (World:foes, World:foes:0:hp).
var foes: Array[Dictionary]:
	get:
		return _foes
## The wave (arena and survive modes) and the boss's phase (boss mode).
var wave: int:
	get:
		return _wave
var phase: int:
	get:
		return _phase

var _rng := RandomNumberGenerator.new()
var _hero := {}
var _foes: Array[Dictionary] = []
var _next_id := 0
var _wave := 0
var _waves := 0
var _next_wave_tick := 0
var _difficulty := 1
var _phase := 0

@onready var _follow: Camera2D = $Follow


## Starts over: a new arena for mode, seeded with rng_seed.
func reset(rng_seed: int, new_mode: Mode, hero_class: String, difficulty: int = 1, waves: int = 0, hero_hp: int = 0) -> void:
	_rng.seed = rng_seed
	mode = new_mode
	tick = 0
	outcome = ""
	running = false
	_foes.clear()
	_next_id = 0
	_wave = 0
	_waves = waves
	_next_wave_tick = 30
	_difficulty = difficulty
	_phase = 0
	var stats: Dictionary = HEROES[hero_class]
	var hp: int = hero_hp if hero_hp > 0 else stats["hp"]
	_hero = {"id": "hero", "kind": hero_class, "pos": SIZE / 2.0, "hp": hp, "max_hp": hp,
		"cooldown": 0, "dodge_until": -1, "dodge_ready": 0, "down_until": -1, "facing": Vector2.RIGHT}
	_emit("SPAWN", {"actor": "hero", "kind": hero_class, "hp": hp})
	if mode == Mode.BOSS:
		_spawn("golem", Vector2(SIZE.x - 80, SIZE.y / 2.0), 60 + 40 * difficulty, "boss")
		_phase = 1
		_emit("BOSS_PHASE", {"phase": 1, "hp": _foes[0]["hp"]})
	queue_redraw()


## The direction from the hero to the nearest foe (Vector2.ZERO for none).
func aim() -> Vector2:
	var foe := _nearest_foe()
	if foe.is_empty():
		return Vector2.ZERO
	return (foe["pos"] - _hero["pos"]).normalized()


## Stops the simulation and reports the outcome.
func halt(why: String = "stopped") -> void:
	if not running:
		return
	running = false
	outcome = why
	finished.emit(why)


func _physics_process(_delta: float) -> void:
	if running:
		_step()


func _step() -> void:
	var intent := _scripted_intent() if scripted else _player_intent()
	_script_waves()
	if not running:
		return
	_hero_acts(intent)
	if not running:
		return
	_foes_act()
	if not running:
		return
	tick += 1
	_follow.position = _hero["pos"]
	queue_redraw()


func _player_intent() -> Dictionary:
	var move := Input.get_vector("move_left", "move_right", "move_up", "move_down")
	return {"move": move, "attack": Input.is_action_just_pressed("attack"), "dodge": Input.is_action_just_pressed("dodge")}


# The scripted fighter of the authored scenarios: close in on the nearest
# foe, strike when in reach, dodge now and then.
func _scripted_intent() -> Dictionary:
	var target := _nearest_foe()
	if target.is_empty():
		return {"move": (SIZE / 2.0 - _hero["pos"]).limit_length(1.0), "attack": false, "dodge": false}
	var to: Vector2 = target["pos"] - _hero["pos"]
	var near := to.length() < HERO_REACH - 8.0
	return {"move": Vector2.ZERO if near else to.normalized(), "attack": near, "dodge": near and _rng.randf() < 0.02}


func _script_waves() -> void:
	if _hero["down_until"] >= 0 and tick >= _hero["down_until"]:
		_hero["down_until"] = -1
		_hero["hp"] = _hero["max_hp"]
		_hero["pos"] = SIZE / 2.0
		_emit("RESPAWN", {"actor": "hero", "hp": _hero["hp"]})
	if mode == Mode.BOSS or _next_wave_tick < 0 or tick < _next_wave_tick:
		return
	if mode == Mode.SURVIVE and _wave >= _waves:
		_emit("SURVIVED", {"waves": _wave, "hp": _hero["hp"]})
		halt("victory")
		return
	_next_wave_tick = -1
	_wave += 1
	var n := mini(1 + _wave, 6)
	_emit("WAVE_START", {"wave": _wave, "foes": n})
	for i in range(n):
		var kind := "slime" if i % 2 == 0 else "skeleton"
		var edge := Vector2(_rng.randf_range(20, SIZE.x - 20), 20.0 if _rng.randf() < 0.5 else SIZE.y - 20)
		_spawn(kind, edge, FOES[kind]["hp"] + 2 * _wave)


func _spawn(kind: String, pos: Vector2, hp: int, id: String = "") -> void:
	_next_id += 1
	if id.is_empty():
		id = "%s_%d" % [kind, _next_id]
	_foes.append({"id": id, "kind": kind, "pos": pos, "hp": hp, "max_hp": hp, "cooldown": FOES[kind]["cooldown"] / 2})
	_emit("SPAWN", {"actor": id, "kind": kind, "hp": hp, "x": roundi(pos.x), "y": roundi(pos.y)})


func _hero_acts(intent: Dictionary) -> void:
	if _hero["down_until"] >= 0:
		return
	var move: Vector2 = intent["move"]
	if move != Vector2.ZERO:
		_hero["facing"] = move.normalized()
	var speed := HERO_SPEED * (2.0 if tick < _hero["dodge_until"] else 1.0)
	_hero["pos"] = (_hero["pos"] + move * speed).clamp(Vector2(12, 12), SIZE - Vector2(12, 12))
	if _hero["cooldown"] > 0:
		_hero["cooldown"] -= 1
	if intent["dodge"] and tick >= _hero["dodge_ready"]:
		_hero["dodge_until"] = tick + DODGE_TICKS
		_hero["dodge_ready"] = tick + DODGE_COOLDOWN_TICKS
		_emit("DODGE", {"actor": "hero"}, DODGE_TICKS * TICK_MS)
	if not intent["attack"] or _hero["cooldown"] > 0:
		return
	_hero["cooldown"] = ATTACK_TICKS
	var target := _nearest_foe()
	if target.is_empty() or (target["pos"] as Vector2).distance_to(_hero["pos"]) > HERO_REACH:
		_emit("SWING", {"actor": "hero"})
		return
	var crit := _rng.randf() < 0.15
	var damage := roundi(HERO_DAMAGE * float(HEROES[_hero["kind"]]["damage"]) * (2.0 if crit else 1.0))
	target["hp"] = maxi(0, target["hp"] - damage)
	var hit := {"actor": "hero", "target": target["id"], "damage": damage, "hp": target["hp"]}
	if crit:
		hit["crit"] = true
	_emit("HIT", hit)
	if target["id"] == "boss":
		_boss_phases(target)
	if target["hp"] == 0:
		_defeated(target)


func _boss_phases(boss: Dictionary) -> void:
	if _phase == 1 and boss["hp"] * 3 <= boss["max_hp"] * 2:
		_phase = 2
		_emit("BOSS_PHASE", {"phase": 2, "hp": boss["hp"]})
		_spawn("skeleton", boss["pos"] + Vector2(0, -40), FOES["skeleton"]["hp"])
	elif _phase == 2 and boss["hp"] * 3 <= boss["max_hp"]:
		_phase = 3
		_emit("BOSS_PHASE", {"phase": 3, "hp": boss["hp"], "enraged": true})


func _defeated(foe: Dictionary) -> void:
	_foes.erase(foe)
	if foe["id"] == "boss":
		_emit("BOSS_DEFEATED", {"heroHp": _hero["hp"], "ticks": tick})
		halt("victory")
		return
	_emit("ENEMY_DEFEATED", {"target": foe["id"], "kind": foe["kind"]})
	if _foes.is_empty() and mode != Mode.BOSS:
		_emit("WAVE_CLEARED", {"wave": _wave})
		_next_wave_tick = tick + 45


func _foes_act() -> void:
	for foe in _foes:
		var stats: Dictionary = FOES[foe["kind"]]
		var speed: float = stats["speed"] * (1.4 if foe["id"] == "boss" and _phase == 3 else 1.0)
		var to: Vector2 = _hero["pos"] - foe["pos"]
		if _hero["down_until"] < 0 and to.length() > stats["reach"] - 4.0:
			foe["pos"] += to.normalized() * speed
		if foe["cooldown"] > 0:
			foe["cooldown"] -= 1
			continue
		if _hero["down_until"] >= 0 or to.length() > stats["reach"]:
			continue
		foe["cooldown"] = stats["cooldown"] - (8 * _difficulty if foe["id"] == "boss" else 0)
		if tick < _hero["dodge_until"]:
			_emit("DODGED", {"actor": foe["id"], "target": "hero"})
			continue
		var damage: int = stats["damage"] + _rng.randi_range(0, 2)
		_hero["hp"] = maxi(0, _hero["hp"] - damage)
		_emit("HIT", {"actor": foe["id"], "target": "hero", "damage": damage, "hp": _hero["hp"]})
		if _hero["hp"] == 0:
			_emit("PLAYER_DOWN", {"actor": "hero", "by": foe["id"], "wave": _wave})
			if mode == Mode.ARENA:
				_hero["down_until"] = tick + RESPAWN_TICKS
			else:
				halt("defeat")
			return


func _nearest_foe() -> Dictionary:
	var best := {}
	var best_d := INF
	for foe in _foes:
		var d: float = (foe["pos"] as Vector2).distance_squared_to(_hero["pos"])
		if d < best_d:
			best_d = d
			best = foe
	return best


func _emit(event: String, payload: Dictionary, duration_ms: float = -1.0) -> void:
	happened.emit(event, payload, duration_ms)


func _draw() -> void:
	draw_rect(Rect2(Vector2.ZERO, SIZE), Color(0.13, 0.12, 0.16))
	draw_rect(Rect2(Vector2(4, 4), SIZE - Vector2(8, 8)), Color(0.35, 0.3, 0.45), false, 4.0)
	for foe in _foes:
		var r := 18.0 if foe["id"] == "boss" else 10.0
		_draw_unit(foe["pos"], r, FOES[foe["kind"]]["color"], float(foe["hp"]) / foe["max_hp"])
	if not _hero.is_empty() and _hero["down_until"] < 0:
		var c: Color = HEROES[_hero["kind"]]["color"]
		if tick < _hero["dodge_until"]:
			c = c.lightened(0.5)
		_draw_unit(_hero["pos"], 11.0, c, float(_hero["hp"]) / _hero["max_hp"])
		draw_line(_hero["pos"], _hero["pos"] + _hero["facing"] * 18.0, Color.WHITE, 2.0)


func _draw_unit(pos: Vector2, radius: float, color: Color, health: float) -> void:
	draw_circle(pos, radius, color)
	var bar := Rect2(pos + Vector2(-radius, -radius - 7), Vector2(radius * 2, 3))
	draw_rect(bar, Color(0.3, 0.05, 0.05))
	draw_rect(Rect2(bar.position, Vector2(bar.size.x * health, bar.size.y)), Color(0.9, 0.2, 0.2))
