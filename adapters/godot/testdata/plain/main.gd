extends Node2D
## A small game as a newcomer writes one, with no Cappy code: the hero
## walks in _process (arrows or WASD); a title timer (SceneTree.create_timer)
## shows the Start button after 1 s; the button (shortcut: the start_game
## action, Enter) starts the round: a banner slides in (a Tween), a coin
## appears at a random place every tick of the Clock (a Timer node, 0.5 s),
## and a bell rings 2 s into the round (another SceneTree timer).
##
## A test knob, PLAIN_FLASH="1200-1500,2600-2800": the background is red
## while the game's elapsed time (ms) is in one of those spans (the same
## events, other pictures).

signal title_shown
signal round_started(seed_check: int)
signal coin_spawned(index: int, at: Vector2)
signal clock_ticked(count: int)
signal bell_rung(round_ms: float)
signal coin_taken(index: int)

const SPEED := 120.0 # px per second of game time

## Seconds of game time the hero has walked through (_process deltas).
var elapsed := 0.0
## Clock ticks so far.
var ticks := 0
## Whether the round runs (the Start button was pressed).
var playing := false
## Coins spawned, and taken.
var spawned := 0
var taken := 0
## Game time since the round started, in ms.
var round_ms := 0.0

var _flashes: Array[Vector2] = []

@onready var _hero: Polygon2D = $Hero
@onready var _coins: Node2D = $Coins
@onready var _background: ColorRect = $Background
@onready var _colour := _background.color


func _ready() -> void:
	for span in OS.get_environment("PLAIN_FLASH").split(",", false):
		var ends := span.split("-")
		_flashes.append(Vector2(float(ends[0]), float(ends[1])))
	$Clock.timeout.connect(_on_clock)
	$Start.pressed.connect(_on_start)
	get_tree().create_timer(1.0).timeout.connect(func() -> void:
		$Start.visible = true
		title_shown.emit())


func _process(delta: float) -> void:
	elapsed += delta
	_background.color = _colour
	for f in _flashes:
		if elapsed * 1000.0 >= f.x and elapsed * 1000.0 <= f.y:
			_background.color = Color(0.8, 0.1, 0.1)
	var dir := Input.get_vector("move_left", "move_right", "move_up", "move_down")
	_hero.position = (_hero.position + dir * SPEED * delta).clamp(Vector2(8, 8), Vector2(312, 172))
	if playing:
		round_ms += delta * 1000.0
		for coin: Node2D in _coins.get_children():
			if coin.position.distance_to(_hero.position) < 12.0 and not coin.is_queued_for_deletion():
				taken += 1
				coin_taken.emit(int(coin.name.trim_prefix("Coin")))
				coin.queue_free()


func _on_start() -> void:
	if playing:
		return
	playing = true
	$Start.visible = false
	round_started.emit(randi() % 1000)
	create_tween().tween_property($Banner, "position:x", 8.0, 0.75)
	get_tree().create_timer(2.0).timeout.connect(func() -> void: bell_rung.emit(round_ms))


func _on_clock() -> void:
	ticks += 1
	clock_ticked.emit(ticks)
	if not playing:
		return
	var coin := Polygon2D.new()
	coin.name = "Coin%d" % spawned
	coin.color = Color(0.4, 0.8, 1.0)
	coin.polygon = PackedVector2Array([Vector2(-4, 0), Vector2(0, -4), Vector2(4, 0), Vector2(0, 4)])
	coin.position = Vector2(randf_range(16, 304), randf_range(16, 164))
	_coins.add_child(coin)
	coin_spawned.emit(spawned, coin.position)
	spawned += 1
