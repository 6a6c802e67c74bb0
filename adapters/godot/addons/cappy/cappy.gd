extends Node
## Cappy: lets a coding agent drive this game through crosscode-mcp.
##
## The autoload "Cappy" (the plugin registers it). When the game is started
## with CAPPY_ENDPOINT and CAPPY_SESSION_TOKEN (crosscode-mcp sets them when
## it launches the game), it connects to that Cappy controller and speaks
## the Cappy adapter protocol. With no line of game code it offers agent
## play (the project's InputMap actions and the pointer, in steps of game
## time), pictures, freeform recordings and their replays, inspect of the
## game's state, and the game's own signals as events (the capture
## config's "events"); game code adds scenarios and richer events. Without
## those variables it does nothing.
##
## Time: from its first frame the game is held (the tree paused and
## Engine.time_scale 0, so that nothing runs: _process, physics, Timer
## nodes, SceneTree timers, Tweens, animations) until an operation runs
## it, and held again between an agent's steps. Every change of state
## happens between two frames, so a frame is always whole. With a fixed
## frame step (Godot started with --fixed-fps equal to its physics ticks
## per second) a frame is exactly one physics frame of game time, and a
## step, a recording and its replay run the very same frames.
##
##     func _ready() -> void:
##         Cappy.register_scenario("boss_fight", _boss_fight, {
##             "difficulty": {"type": "integer", "minimum": 1, "maximum": 3, "default": 2},
##         })
##
##     func _boss_fight(op: CappyOperation) -> Dictionary:
##         var fight := BossFight.new(op.params.difficulty)
##         fight.hit.connect(func(dmg: int) -> void: op.emit_event("HIT", {"damage": dmg}))
##         add_child(fight)
##         await fight.finished
##         return {"outcome": fight.outcome}

## Emitted once the controller welcomed this game.
signal connected
## Emitted when the connection to the controller ends.
signal disconnected(reason: String)
## Emitted when an operation starts, before its scenario or start callable runs.
signal operation_started(op: CappyOperation)

const CappyOperation := preload("res://addons/cappy/operation.gd")
const Connection := preload("res://addons/cappy/connection.gd")
const Checks := preload("res://addons/cappy/checks.gd")
const Codec := preload("res://addons/cappy/replay_codec.gd")
const Frames := preload("res://addons/cappy/frames.gd")
const AgentActions := preload("res://addons/cappy/actions.gd")
const Inspector := preload("res://addons/cappy/inspect.gd")

const PROTOCOL_VERSION := 1
const ADAPTER_NAME := "cappy-godot"
const ADAPTER_VERSION := "0.2.0"
## How many frames a step picture may take to be drawn before the step
## goes on without it (a renderer that stopped drawing).
const PICTURE_WAIT_FRAMES := 300
## Frames per second while the game is held (with a fixed frame step): the
## addon keeps answering, and nothing moves.
const HELD_FPS := 60
## Frames per second once the game has been held for IDLE_AFTER_FRAMES
## frames with nothing to do: a held game drawing 60 frames a second in
## software cost almost half a core. The addon still answers at once: a
## held frame's wait ends when a message comes.
const IDLE_FPS := 4
const IDLE_AFTER_FRAMES := 30
## The longest a held frame waits before it looks for a message again.
const HELD_SLICE_USEC := 1000
## The first frames tell the frame step: fixed when each of them is exactly
## one physics frame with nothing left over.
const DETECT_FRAMES := 5
## The most problems with the capture config's events one summary lists.
const MAX_EVENT_PROBLEMS := 10
## The most warnings the controller is sent at once, and the longest one
## (the protocol's limits).
const MAX_WARNINGS := 32
const MAX_WARNING_BYTES := 1000
const MAX_WARNING_CHARS := 250 # a longer one is cut to this (at most 4 bytes a character)

## The game's id in hello; default: the project's name, as a slug.
var game_id := ""
## The game's name in hello; default: the project's name.
var game_name := ""
## The build identity in hello; default: application/config/version.
var build := ""
## A GDScript error while an operation runs fails it with SCRIPT_ERROR
## (a recording keeps going and lists the errors in its summary).
var fail_on_script_error := true
## When the connection to the controller ends (it closed, it died, or it
## rejected this game), the game quits, as a game the controller launched
## should: nothing outlives the controller. Set false to keep playing.
var quit_on_disconnect := true
## Whether the controller may inspect the game's state (capability
## inspect): node paths and their properties. Set before the first frame.
var inspect_enabled := true
## Whether the engine runs on a fixed frame step (Godot started with
## --fixed-fps equal to its physics ticks per second): every frame is then
## exactly one physics frame of game time, whatever the wall clock says.
## Known from the addon's first frames on (read it, do not set it).
var fixed_step := false

var _conn: Connection
var _hello_sent := false
var _welcomed := false
var _ended := false
var _scenarios := {} # id -> {"entry": wire description, "run": Callable}
var _cameras := {} # name -> Camera2D or Camera3D
var _freeform_start := Callable()
var _errors := ScriptErrors.new()
var _errors_logged := false # _errors is one of the engine's loggers
var _frames := Frames.new()
var _actions := AgentActions.new()
var _actions_sent := "" # the actions message last handed to the connection
var _detect_left := DETECT_FRAMES
var _detect_pf := -1
var _detect_ok := true
var _launch_seed := 1 # CAPPY_SEED: the global RNG's seed from the first frame

# The current operation: prepared (waiting for start) or running.
var _op: CappyOperation
var _launched := false
var _replay := {} # the recording a replay plays
var _arm_pending := false
var _armed := false
var _inputs: Array = [] # a recording's [frame, event] pairs
var _next_input := 0 # a replay's next input
var _script_errors: Array[String] = []
var _stop_pending := false # a player's recording ends with this frame
var _finish_pending := false # the recording or replay ends as the next frame begins
var _replay_stopped := false

# Holding the game: between operations and between an agent's steps.
var _held := false # the addon paused the tree (and time_scale is 0)
var _hold_pending := false # time_scale is 0; the tree pauses as the next frame begins
var _run_time_scale := 1.0 # Engine.time_scale while the game runs
var _tree_was_paused := false
var _game_max_steps := 8
var _target_fps := HELD_FPS # frames a second with a fixed frame step (0: as fast as they go)
var _next_frame_usec := 0
var _quiet_frames := 0 # held frames in a row with no message handled

# Agent play (spec section 11).
var _step_id := "" # the step in flight, from its arrival to stepped
var _step := {} # the step waiting for the end of the frame: {"id", "ms", "events"}
var _step_running := false
var _step_end := 0 # the frame a running step ends with
var _stepped_pending := "" # a step whose stepped goes as the next frame begins
var _goal_ms := 0.0 # game time the steps so far asked for
var _deferred: Array[InputEvent] = [] # input of steps that ran no frame
var _step_ends: Array[int] = [] # a recording's step ends; a replay's to come
var _next_step_end := 0
var _picture_due := false # waiting for a step picture
var _picture_wait := 0 # frames waited for it
var _devices := {} # InputMap event -> its own device, while the agent's device has it

# The capture config's events: the game's signals as events.
var _signals := {} # "path:signal" -> event name
var _event_problems: Array[String] = []
var _resolve_queued := false

# Warnings for the agent (the controller's welcome lists "warnings" in
# accepts): what the game's log says that the agent should know.
var _accepts_warnings := false
var _warnings_sent := "[]" # the list last sent, as JSON
var _op_warnings: Array[String] = [] # of the operation running (see _note)

# The presentation in force, restored when the operation ends.
var _base_tps := 60
var _base_time_scale := 1.0
var _scaled := false
var _previous_camera: Node
var _camera_was_enabled := true
var _presented_camera: Node


func _init() -> void:
	# The engine's errors from the start: the main scene is loaded before
	# an autoload's _ready, and what fails to load then (a project not
	# imported) is what the agent must hear of.
	if not OS.get_environment("CAPPY_ENDPOINT").is_empty() and not OS.get_environment("CAPPY_SESSION_TOKEN").is_empty():
		OS.add_logger(_errors)
		_errors_logged = true


func _ready() -> void:
	process_mode = Node.PROCESS_MODE_ALWAYS
	process_priority = -(1 << 30)
	process_physics_priority = -(1 << 30)
	var endpoint := OS.get_environment("CAPPY_ENDPOINT")
	var token := OS.get_environment("CAPPY_SESSION_TOKEN")
	if endpoint.is_empty() or token.is_empty():
		set_process(false)
		set_physics_process(false)
		return
	if not (endpoint.begins_with("ws://") or endpoint.begins_with("wss://")):
		push_warning("Cappy: CAPPY_ENDPOINT %s is not a ws:// URL; not connecting" % endpoint)
		set_process(false)
		set_physics_process(false)
		return
	var project_name := str(ProjectSettings.get_setting("application/config/name", "godot-game"))
	if game_name.is_empty():
		game_name = project_name
	if game_id.is_empty():
		game_id = _slug(project_name)
	if build.is_empty():
		build = str(ProjectSettings.get_setting("application/config/version", ""))
	# Held from the first frame on (the main scene is not there yet): the
	# game waits at its start for an operation, and its random numbers
	# follow the launch's seed, so every launch starts the same.
	_game_max_steps = Engine.max_physics_steps_per_frame
	_run_time_scale = Engine.time_scale
	Engine.time_scale = 0.0
	_tree_was_paused = get_tree().paused
	get_tree().paused = true
	_held = true
	var launch_seed := OS.get_environment("CAPPY_SEED")
	if launch_seed.is_valid_int():
		_launch_seed = launch_seed.to_int()
	seed(_launch_seed)
	_frames.setup(self)
	_actions.add_pointer("pointer", "")
	var late := LateTick.new()
	late.cappy = self
	add_child(late)
	get_tree().node_added.connect(_on_node_added)
	if get_tree().has_signal("scene_changed"):
		get_tree().connect("scene_changed", _queue_resolve)
	_conn = Connection.new()
	var err := _conn.open(endpoint)
	if err != OK:
		push_warning("Cappy: cannot connect to %s: %s" % [endpoint, error_string(err)])
		_conn = null
		_release_now()
		set_process(false)
		set_physics_process(false)
		return
	set_meta("token", token)


func _exit_tree() -> void:
	if _conn != null:
		if _op != null:
			_teardown("cancelled")
		_conn.close(1001, "game quitting")
		_conn = null
	if _errors_logged:
		OS.remove_logger(_errors)
		_errors_logged = false


## Whether this game was started by a Cappy controller (CAPPY_ENDPOINT set).
func is_enabled() -> bool:
	return _conn != null


## Registers an authored scenario. run is called with the CappyOperation
## and may await; when it returns, the scenario completes (a returned
## Dictionary joins the summary) unless it called op.fail first.
## parameters maps each name to {"type": "string" | "number" | "integer" |
## "boolean", "description"?, "required"?, "default"?, "enum"?,
## "minimum"?, "maximum"?}; info may hold "name" and "description".
func register_scenario(id: String, run: Callable, parameters: Dictionary = {}, info: Dictionary = {}) -> void:
	if id.is_empty() or id.length() > 128:
		push_error("Cappy: a scenario id must be 1 to 128 characters")
		return
	for name: Variant in parameters.keys():
		var why := Checks.check_description(str(name), parameters[name] if parameters[name] is Dictionary else {})
		if why != "":
			push_error("Cappy: scenario %s: %s" % [id, why])
			return
	var entry := {"id": id, "requiredCapabilities": ["scenarios"]}
	if not parameters.is_empty():
		entry["parameters"] = parameters
	for key: String in ["name", "description"]:
		if info.has(key):
			entry[key] = str(info[key])
	_scenarios[id] = {"entry": entry, "run": run}
	_registry_changed()


## Removes a scenario from the registry.
func unregister_scenario(id: String) -> void:
	if _scenarios.erase(id):
		_registry_changed()


## Names a camera (Camera2D or Camera3D) for presentation.camera. Register
## cameras before the first frame: hello advertises alternate_cameras then.
func register_camera(camera_name: String, camera: Node) -> void:
	if not (camera is Camera2D or camera is Camera3D):
		push_error("Cappy: camera %s is not a Camera2D or Camera3D" % camera_name)
		return
	_cameras[camera_name] = camera


## Declares that the game resets itself for each recording and replay:
## start is called with the CappyOperation (kind "recording" or "replay")
## and must put the game in the state a recording starts from, seeding its
## random number generators from op.rng_seed; it may await. Input is
## recorded, or replayed, from the frame after it returns. Without it the
## game records and replays all the same, and crosscode-mcp starts a new
## game process for each recording and replay (hello advertises
## "resets_itself" with it). Call it before the first frame.
func set_freeform(start: Callable) -> void:
	_freeform_start = start


## Describes an InputMap action for agents (by default, its bindings).
func describe_action(action: String, description: String) -> void:
	_actions.describe(action, description)
	_actions_changed()


## Leaves an InputMap action out of the actions agents see. Built-in
## ui_* actions are always left out.
func hide_action(action: String) -> void:
	_actions.hide(action)
	_actions_changed()


## Offers two InputMap actions to agents as one axis (kind "axis", value
## -1 to 1, as Input.get_axis(negative, positive) reads them), in place of
## the two buttons.
func add_axis(axis_name: String, negative: String, positive: String, description: String = "") -> void:
	_actions.add_axis(axis_name, "axis", [negative, positive] as Array[String], description)
	_actions_changed()


## Offers four InputMap actions to agents as one axis2d (kind "axis2d",
## x and y -1 to 1, as Input.get_vector reads them), in place of the four
## buttons.
func add_axis2d(axis_name: String, negative_x: String, positive_x: String, negative_y: String, positive_y: String, description: String = "") -> void:
	_actions.add_axis(axis_name, "axis2d", [negative_x, positive_x, negative_y, positive_y] as Array[String], description)
	_actions_changed()


## Offers the mouse to agents (kind "pointer"): x, y in the pixels of the
## game's frames become mouse motion and button events. The addon offers
## it as "pointer" by default (hide_action("pointer") takes it away); call
## this for another name or description.
func add_pointer(description: String = "", action_name: String = "pointer") -> void:
	_actions.add_pointer(action_name, description)
	_actions_changed()


## Offers typing to agents (kind "text"): each character becomes a key
## press and release.
func add_text(description: String = "", action_name: String = "text") -> void:
	_actions.add_text(action_name, description)
	_actions_changed()


## The operation in progress, or null.
func current_operation() -> CappyOperation:
	return _op if _launched else null


## Whether the game is held (between operations and between an agent's
## steps nothing of it runs).
func is_held() -> bool:
	return _held or _hold_pending


# The first thing of each frame's _process: the controller's messages.
func _process(_delta: float) -> void:
	if _conn == null:
		return
	for w in _conn.take_warnings():
		push_warning("Cappy: " + w)
	if not _hello_sent:
		if not _frame_step_known():
			return
		# The game's _ready has registered what it has.
		_hello_sent = true
		_actions_sent = _actions_message()
		_conn.begin(JSON.stringify(_hello()), _registry(), _actions_sent)
	elif Engine.get_process_frames() % 60 == 0 and _devices.is_empty():
		_actions_changed() # the game may change its InputMap at any time
	var state := _conn.state()
	for m in _conn.take():
		_quiet_frames = 0
		_handle(m)
		if _conn == null:
			return
	_check_script_errors()
	if _errors.loads_changed():
		_sync_warnings()
	if state == WebSocketPeer.STATE_CLOSED and not _ended:
		_lost("the controller closed the connection (%s)" % _conn.close_reason())


# Whether the frame step is known. The first frames tell it: with a fixed
# frame step at the physics rate each frame is one physics frame and the
# physics interpolation fraction stays exactly 0; on the wall clock it does
# not (the game is held meanwhile, which changes neither).
func _frame_step_known() -> bool:
	if _detect_left <= 0:
		return true
	var pf := Engine.get_physics_frames()
	if _detect_pf >= 0 and (pf - _detect_pf != 1 or Engine.get_physics_interpolation_fraction() != 0.0):
		_detect_ok = false
	_detect_pf = pf
	_detect_left -= 1
	if _detect_left > 0:
		return false
	fixed_step = _detect_ok
	if not fixed_step:
		push_warning("Cappy: " + _wall_clock_note())
	return true


func _wall_clock_note() -> String:
	return "the engine runs on the wall clock's frame times, so _process, Timer nodes and Tweens do not run exactly a step's time, and replays may differ: start Godot with --fixed-fps %d (its physics ticks per second)" % Engine.physics_ticks_per_second


# The first thing of each physics frame, before the game's: the hold asked
# at the end of the frame before begins (the tree pauses), and what waited
# for the whole frame before to be over goes out.
func _physics_process(delta: float) -> void:
	if _conn == null:
		return
	if _hold_pending:
		_hold_pending = false
		_tree_was_paused = get_tree().paused
		get_tree().paused = true
		_held = true
	if _op == null or not _launched or not _op.is_active():
		return
	if _armed and _held:
		_op._hold_frame() # the operation's clock stands still
	elif _scaled and delta != 0.0 and absf(delta - _base_time_scale / _base_tps) > 1e-9:
		_end(_op, "failed", "SIMULATION_CHANGED", "the physics step became %s s instead of %s s while the operation ran at timeScale %s: the game changed Engine.time_scale or physics_ticks_per_second, so a replay would not be the same simulation" % [delta, _base_time_scale / _base_tps, _op.time_scale])
		return
	if _finish_pending:
		_finish_pending = false
		_finish()
		return
	if not _stepped_pending.is_empty():
		var id := _stepped_pending
		_stepped_pending = ""
		_stepped(_op, id)
	if _picture_due:
		_picture_wait += 1
		if _picture_wait > PICTURE_WAIT_FRAMES:
			_note("no frame was drawn for a step's picture within %d frames; the step went on without it" % PICTURE_WAIT_FRAMES)
			_frames.skip_step_picture()


# The last thing of each frame's _process, after the game's: where a
# recording, a replay or a scenario starts running, where an agent's step
# and a replay put their input in (the game sees it in the next frame, as
# it sees a player's keys), and where a step or an operation ends (held
# from the next frame on).
func _late_process() -> void:
	if _op == null or not _launched or not _op.is_active():
		return
	if _op.kind == "scenario":
		if is_held():
			_release()
			_pace(false)
		return
	if not _armed:
		if _arm_pending:
			_arm_pending = false
			_arm()
		elif is_held():
			_release() # the start callable awaits: the game runs until it returns
			_pace(false)
		return
	if _finish_pending:
		return
	if _op.control == "agent":
		_agent_tick()
	elif _op.kind == "replay":
		_replay_tick()
	elif _stop_pending:
		_stop_pending = false
		_request_hold()
		_finish_pending = true


# Holds the game from the next frame on: Engine.time_scale is 0 from now
# (the frames to come, SceneTree timers included, get no time) and the
# tree pauses as the next frame begins (nothing of this one is cut short).
func _request_hold() -> void:
	_set_pace(HELD_FPS)
	if _held or _hold_pending:
		return
	_run_time_scale = Engine.time_scale
	Engine.time_scale = 0.0
	_hold_pending = true


# Lets the game run from the next frame on: called at the end of a frame,
# so that input parsed now reaches an unpaused game between the two.
func _release() -> void:
	if _hold_pending:
		_hold_pending = false
		_frames.changed()
		Engine.time_scale = _run_time_scale
		return
	if not _held:
		return
	_held = false
	_frames.changed()
	get_tree().paused = _tree_was_paused
	Engine.time_scale = _run_time_scale


# The controller is gone: the game runs on as it would without the addon.
func _release_now() -> void:
	if _held or _hold_pending:
		_hold_pending = false
		if _held:
			_held = false
			get_tree().paused = _tree_was_paused
		Engine.time_scale = _run_time_scale
	_target_fps = 0
	Engine.max_physics_steps_per_frame = _game_max_steps


# How fast frames follow each other while the operation runs. With a fixed
# frame step game time is the frames' count, not the wall clock's: an
# agent's steps and replays run as fast as the machine goes, a player's
# recording and a scenario in real time at the presentation's timeScale.
func _pace(flat_out: bool) -> void:
	if flat_out:
		_set_pace(0)
	else:
		_set_pace(maxi(1, roundi(_base_tps * (_op.time_scale if _op != null else 1.0))))


func _set_pace(fps: int) -> void:
	_target_fps = fps


# With a fixed frame step Godot never waits between frames (its max_fps
# does not apply): the addon paces them itself, at _target_fps (0: as
# fast as they go), waiting at the end of each frame as long as it needs.
# A held game (its frames move nothing) waits at IDLE_FPS once it has
# nothing to do, and a held frame's wait ends when a message comes.
func _pace_frame() -> void:
	if not fixed_step or _target_fps <= 0:
		_next_frame_usec = 0
		_quiet_frames = 0
		return
	var held := _held and _target_fps == HELD_FPS
	var fps := _target_fps
	if not held:
		_quiet_frames = 0
	else:
		_quiet_frames += 1
		if _quiet_frames > IDLE_AFTER_FRAMES and _nothing_due():
			fps = IDLE_FPS
	var now := Time.get_ticks_usec()
	var period := 1000000 / fps
	if _next_frame_usec == 0 or now - _next_frame_usec > 4 * period:
		_next_frame_usec = now # a start, or a stall: no catching up
	_next_frame_usec += period
	if not held:
		if _next_frame_usec > now:
			OS.delay_usec(_next_frame_usec - now)
		return
	while _next_frame_usec > now:
		if _conn != null and _conn.has_messages():
			_next_frame_usec = now # the next frame handles it at once
			return
		OS.delay_usec(mini(_next_frame_usec - now, HELD_SLICE_USEC))
		now = Time.get_ticks_usec()


# Whether a held game waits for nothing a frame would bring: no picture to
# draw, no message to send as the next frame begins.
func _nothing_due() -> bool:
	return not _picture_due and not _hold_pending and not _finish_pending and _stepped_pending.is_empty() and not _frames.waiting()


# Parses input for the game to see in the next frame: left in Input's
# buffer, it is flushed between the two frames, where a player's keys
# come in (pressed and just pressed in the next _physics_process and
# _process, delivered to _input and GUI shortcuts then).
func _inject(events: Array) -> void:
	if events.is_empty():
		return
	var accumulated := Input.use_accumulated_input
	Input.use_accumulated_input = true
	for e: InputEvent in events:
		Input.parse_input_event(e)
	Input.use_accumulated_input = accumulated


# The start of a recording or replay (the end of the frame its start
# callable returned in): its clock starts here at 0, input starts from
# nothing held, and recording begins.
func _arm() -> void:
	_armed = true
	_op._start_clock(1000.0 / _base_tps)
	for action: StringName in InputMap.get_actions():
		Input.action_release(action)
	if _op.control == "agent" or _op.kind == "replay" and _replay.get("control") == "agent":
		_bind_to_agent()
	if _op.control == "agent":
		# The agent's steps are the input, recorded as they go in; the
		# window's own (a player's keys) is not. The game waits, held.
		_inputs = []
		_step_ends = []
		_goal_ms = 0.0
		_step_end = 0
		_actions.release_all()
		_request_hold()
	elif _op.kind == "recording":
		_inputs = []
		get_tree().root.window_input.connect(_record_input)
		_release()
		_pace(false)
	else:
		_next_input = 0
		_next_step_end = 0
		_release()
		_pace(true)
		_replay_tick()


# While an agent plays (and in the replay of its play), the game's actions
# are bound to the agent's device: a player's keys, buttons and sticks do
# not press them, nor does a key the agent types as text; the agent's keys
# (AgentActions.AGENT_DEVICE) do, through the InputMap as a player's would.
func _bind_to_agent() -> void:
	for action: StringName in InputMap.get_actions():
		if String(action).begins_with("ui_"):
			continue
		for e: InputEvent in InputMap.action_get_events(action):
			if not _devices.has(e):
				_devices[e] = e.device
				e.device = AgentActions.AGENT_DEVICE


func _unbind_from_agent() -> void:
	for e: InputEvent in _devices:
		if is_instance_valid(e):
			e.device = _devices[e]
	_devices = {}


# A player's input, as the window received it (between two frames): the
# next frame is the first to see it.
func _record_input(event: InputEvent) -> void:
	if _op == null or not _armed or _op.kind != "recording" or _op.control == "agent":
		return
	var d := Codec.encode_event(event)
	if not d.is_empty():
		_inputs.append([_op.tick() + 1, d])


# A replay, at the end of each frame: the input the next frame saw in the
# recording goes in, a step picture is taken where the recording took one,
# and the replay ends with the recording's last frame.
func _replay_tick() -> void:
	var tick := _op.tick()
	var inputs: Array = _replay["inputs"]
	var batch: Array[InputEvent] = []
	while _next_input < inputs.size() and int(inputs[_next_input][0]) <= tick + 1:
		var e := Codec.decode_event(inputs[_next_input][1])
		if e != null:
			batch.append(e)
		_next_input += 1
	_inject(batch)
	if _next_step_end < _step_ends.size() and _step_ends[_next_step_end] <= tick:
		while _next_step_end < _step_ends.size() and _step_ends[_next_step_end] <= tick:
			_next_step_end += 1
		if _frames.active_for(_op):
			_picture_due = true
			_picture_wait = 0
			_frames.step_picture(_op, func() -> void: _picture_due = false)
	if tick >= int(_replay["ticks"]):
		_request_hold()
		_finish_pending = true


# Agent play, at the end of each frame: a running step ends with its last
# frame (held from the next), and a step waiting begins (its input goes in
# now, for the next frame to see).
func _agent_tick() -> void:
	if _step_running:
		if _op.tick() >= _step_end:
			_step_running = false
			_request_hold()
			_end_step(true)
		return
	if not _step.is_empty() and not _picture_due:
		_begin_step()


# Frames a step waiting would run (0: it applies and looks).
func _step_frames(ms: float) -> int:
	return roundi((_goal_ms + ms) / _op._tick_ms) - _op.tick()


func _begin_step() -> void:
	var s := _step
	_step = {}
	var tick := _op.tick()
	var frames := _step_frames(float(s["ms"]))
	_goal_ms += float(s["ms"])
	var events: Array = s["events"]
	if frames <= 0:
		# Apply and look: the input goes in with the next step that runs.
		_deferred.append_array(events)
		_end_step(false)
		return
	var all: Array[InputEvent] = _deferred.duplicate()
	all.append_array(events)
	_deferred.clear()
	for e: InputEvent in all:
		_inputs.append([tick + 1, Codec.encode_event(e)])
	_release()
	_pace(true)
	_inject(all)
	_step_end = tick + frames
	_step_running = true


# The step is over (ran: its last frame is running; the game is held from
# the next): its picture (when frames were asked) at the next draw, which
# shows where it ended, then stepped; without pictures, stepped goes as
# the next frame begins, after every event of this one.
func _end_step(ran: bool) -> void:
	var tick := _op.tick()
	if _step_ends.is_empty() or _step_ends[-1] != tick:
		_step_ends.append(tick)
	var op := _op
	var id := _step_id
	if _frames.active_for(op):
		_picture_due = true
		_picture_wait = 0
		_frames.step_picture(op, func() -> void:
			_picture_due = false
			_stepped(op, id), not ran and _held)
	elif ran:
		_stepped_pending = id
	else:
		_stepped(op, id)


func _stepped(op: CappyOperation, id: String) -> void:
	if op != _op or id != _step_id or id.is_empty():
		return
	_step_id = ""
	_send({"type": "stepped", "op": op.id, "id": id, "t": snappedf(op.presented_time_ms(), 0.001), "simT": snappedf(op.sim_time_ms(), 0.001)})


func _hello() -> Dictionary:
	var caps: Array[String] = ["scenarios", "time_scale", "freeform_recording", "replay", "input", "seed", "config_events", "warnings"]
	if _freeform_start.is_valid():
		caps.append("resets_itself")
	if inspect_enabled:
		caps.append("inspect")
	if not _cameras.is_empty():
		caps.append("alternate_cameras")
	if _frames.available():
		caps.append("frames")
	var hello := {"type": "hello", "protocol": {"min": PROTOCOL_VERSION, "max": PROTOCOL_VERSION},
		"token": get_meta("token"), "adapter": {"name": ADAPTER_NAME, "version": ADAPTER_VERSION},
		"game": {"id": game_id, "name": game_name}, "capabilities": caps}
	if not build.is_empty():
		hello["build"] = build
	return hello


func _has_capability(c: String) -> bool:
	return (_hello()["capabilities"] as Array).has(c)


func _send(msg: Dictionary) -> bool:
	if _conn == null:
		return false
	return _conn.send(JSON.stringify(msg))


func _registry() -> String:
	var list: Array = []
	for id: String in _scenarios:
		list.append(_scenarios[id]["entry"])
	return JSON.stringify({"type": "scenarios", "scenarios": list})


# The connection's thread sends the registry on welcome and list_scenarios;
# a change after the hello goes out at once (or on welcome).
func _registry_changed() -> void:
	if _conn != null and _hello_sent:
		_conn.set_registry(_registry())


# The actions message.
func _actions_message() -> String:
	var view := _view_size()
	return JSON.stringify({"type": "actions", "actions": _actions.catalogue(view)})


# The size of the game's picture: the root viewport's when the engine
# renders, else (headless: no frames) the project's viewport size.
func _view_size() -> Vector2i:
	if _frames.available():
		return Vector2i(get_viewport().get_visible_rect().size)
	return Vector2i(int(ProjectSettings.get_setting("display/window/size/viewport_width", 1152)),
		int(ProjectSettings.get_setting("display/window/size/viewport_height", 648)))


# Sends the actions again when they changed since the last time.
func _actions_changed() -> void:
	if _conn == null or not _hello_sent:
		return
	var text := _actions_message()
	if text != _actions_sent and not text.is_empty():
		_actions_sent = text
		_conn.set_actions(text)


func _handle(m: Dictionary) -> void:
	var type: String = m["type"]
	var op_id := str(m.get("op", ""))
	if not _welcomed:
		match type:
			"welcome":
				if int(m.get("protocol", 0)) != PROTOCOL_VERSION:
					_shut("the controller welcomed protocol %s; this adapter speaks %d" % [m.get("protocol"), PROTOCOL_VERSION])
					return
				_welcomed = true # the connection's thread sent the registry
				var accepts: Variant = m.get("accepts", [])
				_accepts_warnings = accepts is Array and (accepts as Array).has("warnings")
				_set_signal_events(m.get("events"))
				_sync_warnings()
				connected.emit()
			"reject":
				_shut("the controller rejected this game: %s: %s" % [m.get("code"), m.get("message")])
			"error":
				push_warning("Cappy: controller error %s: %s" % [m.get("code"), m.get("message")])
			_:
				push_warning("Cappy: ignoring %s before welcome" % type)
		return
	match type:
		"list_scenarios":
			pass # answered by the connection's thread
		"prepare_scenario":
			_prepare_scenario(op_id, m)
		"prepare_replay":
			_prepare_replay(op_id, m)
		"record_start":
			_record_start(op_id, m)
		"start":
			_start(op_id)
		"stop":
			if _op != null and _op.id == op_id and _launched:
				_stop()
		"cancel":
			if _op != null and _op.id == op_id:
				_teardown("cancelled")
		"step":
			_on_step(op_id, m)
		"inspect":
			_on_inspect(m)
		"error":
			push_warning("Cappy: controller error %s: %s" % [m.get("code"), m.get("message")])
			if _op != null and _op.id == op_id and not op_id.is_empty():
				_teardown("cancelled")
		"reject":
			_shut("the controller rejected this game: %s: %s" % [m.get("code"), m.get("message")])
		"welcome":
			push_warning("Cappy: ignoring a second welcome")
		_:
			push_warning("Cappy: ignoring a %s message" % type)


# A step of an agent-controlled recording: checked now, begun at the end
# of this frame (a look that runs nothing, at once).
func _on_step(op_id: String, m: Dictionary) -> void:
	var id := str(m.get("id", ""))
	if id.is_empty():
		push_warning("Cappy: ignoring a step without id")
		return
	if _op == null or _op.id != op_id or not _launched or _op.control != "agent":
		_refuse_step(op_id, id, "PROTOCOL_OUT_OF_STATE", "no agent-controlled recording %s is running" % op_id)
		return
	if not _step_id.is_empty():
		_refuse_step(op_id, id, "OPERATION_BUSY", "step %s is still running" % _step_id)
		return
	var ms: Variant = m.get("ms")
	if not (ms is float or ms is int) or not (float(ms) >= 0.0 and float(ms) <= 10000.0):
		_refuse_step(op_id, id, "INVALID_INPUT", "ms must be a number from 0 to 10000, got %s" % JSON.stringify(ms))
		return
	var view := _view_size()
	var built := _actions.build(m.get("actions", []), view, _frames.width_for(_op))
	if built.has("error"):
		_refuse_step(op_id, id, "INVALID_INPUT", built["error"])
		return
	_step_id = id
	_step = {"id": id, "ms": float(ms), "events": built["events"]}
	if _armed and not _step_running and not _picture_due and _stepped_pending.is_empty() and _step_frames(float(ms)) <= 0:
		# A look changes nothing in the held game: no need to wait for the
		# end of the frame (its input goes in with the next step's).
		_begin_step()


func _refuse_step(op_id: String, id: String, code: String, message: String) -> void:
	_send({"type": "step_refused", "op": op_id, "id": id, "code": code, "message": message.left(4000)})


# inspect: answered at once, at any time after welcome.
func _on_inspect(m: Dictionary) -> void:
	var id := str(m.get("id", ""))
	if id.is_empty():
		push_warning("Cappy: ignoring an inspect without id")
		return
	var result := {}
	if not inspect_enabled:
		result = {"error": {"code": "CAPABILITY_MISSING", "message": "this game does not allow inspect (Cappy.inspect_enabled is false)"}}
	elif not (m.get("query", "") is String):
		result = {"error": {"code": "INVALID_QUERY", "message": "query must be a string"}}
	else:
		result = Inspector.answer(get_tree(), m.get("query", ""), self)
	if result.has("value"):
		_conn.send("{\"type\":\"inspect_result\",\"id\":%s,\"value\":%s}" % [JSON.stringify(id), result["value"]])
	else:
		_send({"type": "inspect_result", "id": id, "error": result["error"]})


func _fail_request(op_id: String, code: String, message: String) -> void:
	_send({"type": "failed", "op": op_id, "code": code, "message": message})


# Whether a new operation may begin; answers OPERATION_BUSY otherwise.
func _admit(op_id: String) -> bool:
	if op_id.is_empty():
		push_warning("Cappy: ignoring an operation request without op")
		return false
	if _op != null:
		_fail_request(op_id, "OPERATION_BUSY", "operation %s is still active" % _op.id)
		return false
	return true


# Checks presentation and frames; on success the op carries them.
func _prepare_common(op: CappyOperation, m: Dictionary) -> bool:
	var p: Variant = m.get("presentation", {})
	if p == null:
		p = {}
	if not (p is Dictionary):
		_fail_request(op.id, "PRESENTATION_UNSUPPORTED", "presentation must be an object")
		return false
	var refusal := Checks.check_presentation(p, _has_capability)
	if not refusal.is_empty():
		_fail_request(op.id, refusal["code"], refusal["message"])
		return false
	if p.has("camera") and not _cameras.has(p["camera"]):
		_fail_request(op.id, "UNKNOWN_CAMERA", "no camera %s (cameras: %s)" % [p["camera"], ", ".join(PackedStringArray(_cameras.keys()))])
		return false
	op.presentation = p
	op.time_scale = float(p.get("timeScale", 1.0))
	op.camera = str(p.get("camera", ""))
	if m.has("frames") and m["frames"] != null:
		if not _frames.available():
			_fail_request(op.id, "PROTOCOL_OUT_OF_STATE", "frames asked of an adapter that did not advertise them")
			return false
		var f := Checks.check_frames(m["frames"])
		if f.has("error"):
			_fail_request(op.id, "PROTOCOL_INVALID_MESSAGE", f["error"])
			return false
		op.set_meta("frames", f)
	return true


func _prepare_scenario(op_id: String, m: Dictionary) -> void:
	if not _admit(op_id):
		return
	var id := str(m.get("scenario", ""))
	if not _scenarios.has(id):
		_fail_request(op_id, "SCENARIO_NOT_FOUND", "no scenario %s" % id)
		return
	var args: Variant = m.get("parameters", {})
	if args == null:
		args = {}
	if not (args is Dictionary):
		_fail_request(op_id, "INVALID_PARAMETERS", "parameters must be an object")
		return
	var entry: Dictionary = _scenarios[id]["entry"]
	var resolved := Checks.resolve(id, entry.get("parameters", {}), args)
	if resolved.has("error"):
		_fail_request(op_id, "INVALID_PARAMETERS", resolved["error"])
		return
	var op := CappyOperation.new(self, op_id, "scenario")
	op.scenario = id
	op.params = resolved["params"]
	if not _prepare_common(op, m):
		return
	_op = op
	_send({"type": "ready", "op": op_id})


func _prepare_replay(op_id: String, m: Dictionary) -> void:
	if not _admit(op_id):
		return
	var decoded := Codec.from_payload(m.get("replay"), game_id, Engine.physics_ticks_per_second)
	if not decoded.has("recording"):
		_fail_request(op_id, decoded["code"], decoded["message"])
		return
	var op := CappyOperation.new(self, op_id, "replay")
	if not _prepare_common(op, m):
		return
	_replay = decoded["recording"]
	op.rng_seed = _seed_of(m, _replay["seed"])
	_step_ends = _replay["steps"]
	_next_step_end = 0
	_op = op
	_send({"type": "ready", "op": op_id})


func _record_start(op_id: String, m: Dictionary) -> void:
	if not _admit(op_id):
		return
	var control: Variant = m.get("control", "")
	if control != null and control != "" and control != "agent":
		_fail_request(op_id, "PROTOCOL_INVALID_MESSAGE", "record_start.control must be \"agent\", got %s" % JSON.stringify(control))
		return
	var op := CappyOperation.new(self, op_id, "recording")
	op.control = "agent" if control == "agent" else ""
	if not _prepare_common(op, m):
		return
	op.rng_seed = _seed_of(m, _launch_seed)
	_op = op
	_launch()


# The seed a record_start or prepare_replay carries (capability seed), or
# fallback.
static func _seed_of(m: Dictionary, fallback: int) -> int:
	var s: Variant = m.get("seed")
	if (s is int or s is float) and float(s) == floorf(float(s)) and absf(float(s)) < 9.0e15:
		return int(s)
	return fallback


func _start(op_id: String) -> void:
	if _op == null or _op.id != op_id:
		_fail_request(op_id, "PROTOCOL_OUT_OF_STATE", "operation %s is not prepared" % op_id)
	elif _launched:
		push_warning("Cappy: ignoring a repeated start of %s" % op_id)
	else:
		_launch()


func _launch() -> void:
	var op := _op
	_launched = true
	_script_errors.clear()
	_errors.take()
	_apply_presentation(op)
	op._start_clock(1000.0 / _base_tps)
	# The signals as the operation finds the scene, and what is wrong
	# with them, before it starts: its warnings are known from its start.
	_resolve_signals()
	_sync_warnings()
	if not _send({"type": "started", "op": op.id}):
		_teardown("cancelled")
		return
	_frames.begin(op)
	_frames.changed() # the operation's start may set the game up
	if not fixed_step:
		# On the wall clock, at most one physics frame a frame: a step's
		# frames are counted one by one.
		Engine.max_physics_steps_per_frame = 1
	operation_started.emit(op)
	if op.kind == "scenario":
		_run_scenario(op)
	else:
		_run_freeform(op)


func _run_scenario(op: CappyOperation) -> void:
	var run: Callable = _scenarios[op.scenario]["run"]
	var result: Variant = await run.call(op)
	_check_script_errors()
	if op.is_active():
		if result is Dictionary:
			op.summary.merge(result, true)
		_end(op, "completed", "", "")


func _run_freeform(op: CappyOperation) -> void:
	seed(op.rng_seed)
	if _freeform_start.is_valid():
		await _freeform_start.call(op)
	_check_script_errors()
	if op.is_active():
		_arm_pending = true


func _stop() -> void:
	var op := _op
	op._request_stop()
	_replay_stopped = op.kind == "replay"
	if not _armed:
		_finish()
	elif op.kind == "replay":
		# It ends as the next frame begins, this one whole.
		_request_hold()
		_finish_pending = true
	elif op.control != "agent":
		_stop_pending = true # a player's recording: with this frame
	elif _step_running:
		_request_hold()
		_finish_pending = true
	else:
		_finish() # held: nothing more runs


# Ends a recording or replay with its last whole frame.
func _finish() -> void:
	var op := _op
	if op.kind == "recording":
		_finish_recording(op)
		return
	op.summary.merge({"ticks": op.tick() if _armed else 0, "inputs": _next_input}, false)
	if _replay_stopped:
		op.summary["stopped"] = true
	_end(op, "completed", "", "")


func _finish_recording(op: CappyOperation) -> void:
	var ticks := op.tick() if _armed else 0
	var inputs: Array = []
	for item: Array in _inputs:
		if int(item[0]) <= ticks: # input after the last frame never reached the game
			inputs.append(item)
	var rec := {"format": Codec.FORMAT, "game": game_id, "seed": op.rng_seed,
		"physicsTicksPerSecond": _base_tps, "ticks": ticks, "inputs": inputs, "fixedStep": fixed_step}
	if op.control == "agent":
		rec["control"] = "agent"
		rec["steps"] = _step_ends
	var payload := Codec.to_payload(rec)
	if payload.has("error"):
		_end(op, "failed", "REPLAY_INVALID", payload["error"])
		return
	op.summary.merge({"ticks": ticks, "inputs": inputs.size(), "seed": op.rng_seed}, false)
	if op.control == "agent":
		op.summary["steps"] = _step_ends.size()
	if not _script_errors.is_empty():
		op.summary["scriptErrors"] = _script_errors.slice(0, 5)
	op.set_meta("replay", payload)
	_end(op, "completed", "", "")


# Called by CappyOperation.emit_event.
func _send_event(op: CappyOperation, text: String) -> bool:
	if op != _op or not _launched:
		return false
	if text.length() > Connection.MAX_MESSAGE_BYTES:
		_note("an event of %d bytes was dropped: over the 4 MiB message limit" % text.length())
		return false
	return _conn.send(text)


# Called by CappyOperation.capture_frame.
func _capture_frame(op: CappyOperation, reason: String) -> void:
	if op == _op and _launched:
		_frames.extra(op, reason)


# Called by CappyOperation.fail and complete.
func _end_operation(op: CappyOperation, status: String, code: String, message: String) -> void:
	if op == _op and _launched:
		_end(op, status, code, message)


# Sends the operation's outcome and tears it down.
func _end(op: CappyOperation, status: String, code: String, message: String) -> void:
	if op != _op or not op.is_active():
		return
	var msg := {"type": status, "op": op.id}
	if status == "failed":
		msg["code"] = code
		msg["message"] = message.left(4000)
	else:
		if op.has_meta("replay"):
			msg["replay"] = op.get_meta("replay")
		op.summary.merge({"simMs": snappedf(op.sim_time_ms(), 0.001), "events": op.events}, false)
		var warnings := _warnings()
		if not warnings.is_empty():
			op.summary["warnings"] = warnings
		msg["summary"] = op.summary
	_teardown(status)
	_send(msg)


# Ends the current operation locally: restores the presentation, stops
# recording and frames, holds the game again, and tells the game.
func _teardown(status: String) -> void:
	var op := _op
	if op == null:
		return
	_op = null
	if _armed and op.kind == "recording" and op.control != "agent":
		get_tree().root.window_input.disconnect(_record_input)
	if op.control == "agent":
		# The keys the agent held come up, as a player's would.
		for e: InputEvent in _actions.release_events():
			Input.parse_input_event(e)
		Input.flush_buffered_events()
		_actions.release_all()
	_unbind_from_agent()
	if _launched:
		_request_hold()
	_step_id = ""
	_step = {}
	_step_running = false
	_stepped_pending = ""
	_deferred.clear()
	_step_ends = []
	_next_step_end = 0
	_picture_due = false
	_launched = false
	_armed = false
	_arm_pending = false
	_stop_pending = false
	_finish_pending = false
	_replay_stopped = false
	_replay = {}
	_op_warnings.clear()
	_sync_warnings()
	_frames.end()
	_restore_presentation()
	Engine.max_physics_steps_per_frame = _game_max_steps
	op._finish(status)


# The presentation: with a fixed frame step the game runs the very same
# frames at any timeScale (only t, the frames' pacing and what they show
# change); on the wall clock a timeScale s runs s times as many physics
# frames a second, each as long in game time as at speed 1.
func _apply_presentation(op: CappyOperation) -> void:
	_base_tps = Engine.physics_ticks_per_second
	_base_time_scale = _run_time_scale if is_held() else Engine.time_scale
	_scaled = op.time_scale != 1.0 and not fixed_step
	if _scaled:
		var tps := maxi(1, roundi(_base_tps * op.time_scale))
		Engine.physics_ticks_per_second = tps
		var ts := _base_time_scale * tps / _base_tps
		if is_held():
			_run_time_scale = ts
		else:
			Engine.time_scale = ts
	_previous_camera = null
	_presented_camera = null
	if op.camera != "":
		var cam: Node = _cameras[op.camera]
		_presented_camera = cam
		if cam is Camera2D:
			_previous_camera = get_viewport().get_camera_2d()
			_camera_was_enabled = (cam as Camera2D).enabled
			(cam as Camera2D).enabled = true
			(cam as Camera2D).make_current()
		elif cam is Camera3D:
			_previous_camera = get_viewport().get_camera_3d()
			(cam as Camera3D).make_current()


func _restore_presentation() -> void:
	if _scaled:
		Engine.physics_ticks_per_second = _base_tps
		if is_held():
			_run_time_scale = _base_time_scale
		else:
			Engine.time_scale = _base_time_scale
		_scaled = false
	if is_instance_valid(_previous_camera):
		_previous_camera.call("make_current")
	if is_instance_valid(_presented_camera) and _presented_camera is Camera2D and not _camera_was_enabled:
		(_presented_camera as Camera2D).enabled = false
	_previous_camera = null
	_presented_camera = null


# The capture config's events (welcome.events, capability config_events):
# {"NODE_PATH:signal": "EVENT_NAME"}, paths relative to the current
# scene's root ("." for the root itself).
func _set_signal_events(v: Variant) -> void:
	_signals = {}
	_event_problems = []
	if v == null:
		return
	if not (v is Dictionary):
		_event_problems.append("events must be an object of \"NODE_PATH:signal\": \"EVENT_NAME\"")
		return
	for key: Variant in v:
		var event: Variant = v[key]
		if not (key is String) or not (key as String).contains(":") or (key as String).ends_with(":") or not (event is String) or (event as String).is_empty():
			_event_problems.append("events: %s: %s is not \"NODE_PATH:signal\": \"EVENT_NAME\"" % [JSON.stringify(key), JSON.stringify(event)])
			continue
		_signals[key] = event
	_resolve_signals()


# Connects the configured signals of the nodes there now (again at each
# operation's start and when nodes come and go: scenes change).
func _resolve_signals() -> void:
	_resolve_queued = false
	if _signals.is_empty():
		return
	var scene := get_tree().current_scene
	var problems: Array[String] = []
	for key: String in _signals:
		var cut := key.rfind(":")
		var path := key.substr(0, cut)
		var signal_name := key.substr(cut + 1)
		var node: Node = scene.get_node_or_null(NodePath(path)) if scene != null else null
		if node == null:
			problems.append("events: no node %s under the scene %s (for %s)" % [path, scene.get_path() if scene != null else NodePath("/root"), _signals[key]])
			continue
		if not node.has_signal(signal_name):
			problems.append("events: %s (%s) has no signal %s (for %s)" % [path, node.get_class(), signal_name, _signals[key]])
			continue
		var handler := _on_game_signal.bind(_signals[key])
		if not node.is_connected(signal_name, handler):
			node.connect(signal_name, handler)
	_event_problems = problems
	_sync_warnings()


# What the agent should know of this game, as it stands: a frame step on
# the wall clock, resources that failed to load (a project not imported),
# and what is wrong with the capture config's events.
func _warnings() -> Array[String]:
	var out: Array[String] = []
	if _detect_left <= 0 and not fixed_step:
		out.append(_wall_clock_note())
	var loads := _errors.load_failures()
	if int(loads["count"]) > 0:
		var paths := ", ".join(PackedStringArray(loads["paths"]))
		if loads["unimported"]:
			out.append("the project is not imported: %d resources failed to load (%s), so what uses them is missing from the game and its pictures; import it once, and again after adding assets: godot --headless --import --path %s" % [loads["count"], paths, ProjectSettings.globalize_path("res://").trim_suffix("/")])
		else:
			out.append("%d resources failed to load (%s): what uses them is missing; the game's log says why" % [loads["count"], paths])
	out.append_array(_event_problems.slice(0, MAX_EVENT_PROBLEMS))
	out.append_array(_op_warnings)
	for i in out.size():
		if out[i].to_utf8_buffer().size() > MAX_WARNING_BYTES:
			out[i] = out[i].left(MAX_WARNING_CHARS)
	return out.slice(0, MAX_WARNINGS)


# A warning of the operation running: in the game's log, and the agent's
# (it is over with the operation).
func _note(text: String) -> void:
	push_warning("Cappy: " + text)
	if _op != null and not _op_warnings.has(text) and _op_warnings.size() < 8:
		_op_warnings.append(text)
		_sync_warnings()


# Sends the warnings when they changed since the last time (to a
# controller that takes them).
func _sync_warnings() -> void:
	if _conn == null or not _welcomed or not _accepts_warnings:
		return
	var warnings := _warnings()
	var text := JSON.stringify(warnings)
	if text != _warnings_sent:
		_warnings_sent = text
		_send({"type": "warnings", "warnings": warnings})


func _on_node_added(_node: Node) -> void:
	if not _signals.is_empty():
		_queue_resolve()


func _queue_resolve() -> void:
	if not _resolve_queued:
		_resolve_queued = true
		_resolve_signals.call_deferred()


# One of the configured signals: an event of the running operation, its
# arguments as the payload's args.
func _on_game_signal(...args: Array) -> void:
	var event: String = args.pop_back()
	var op := _op
	if op == null or not _launched or not op.is_active():
		return
	var budget := {"left": 10000}
	var values: Array = []
	for a: Variant in args:
		values.append(Inspector._json(a, 0, budget))
	op.emit_event(event, {"args": values})


func _check_script_errors() -> void:
	var errors := _errors.take()
	if errors.is_empty() or _op == null or not _launched:
		return
	if _op.kind == "recording" or not fail_on_script_error:
		_script_errors.append_array(errors)
		return
	_end(_op, "failed", "SCRIPT_ERROR", "a GDScript error while the %s ran: %s" % [_op.kind, errors[0]])


# The connection is gone: the operation is over, and the game quits
# unless quit_on_disconnect is false.
func _lost(why: String, exit_code: int = 0) -> void:
	_ended = true
	if _op != null:
		_teardown("cancelled")
	_release_now()
	push_warning("Cappy: " + why)
	disconnected.emit(why)
	if quit_on_disconnect:
		get_tree().quit(exit_code)


func _shut(why: String) -> void:
	_conn.close(1000, "")
	_conn = null
	set_process(false)
	set_physics_process(false)
	_lost(why, 1)


static func _slug(s: String) -> String:
	var out := ""
	for c in s.to_lower():
		out += c if (c >= "a" and c <= "z") or (c >= "0" and c <= "9") else "-"
	while out.contains("--"):
		out = out.replace("--", "-")
	out = out.trim_prefix("-").trim_suffix("-")
	return out if not out.is_empty() else "godot-game"


## Runs after every other node's _process.
class LateTick extends Node:
	var cappy: Node

	func _ready() -> void:
		process_mode = Node.PROCESS_MODE_ALWAYS
		process_priority = 1 << 30

	func _process(_delta: float) -> void:
		cappy._late_process()
		cappy._pace_frame()


## Records GDScript errors (from any thread) for the operation in
## progress, and the resources that failed to load (from the start).
class ScriptErrors extends Logger:
	const LOAD_ERRORS: Array[String] = ["Failed loading resource: ", "No loader found for resource: ", "Unable to open file: "]
	## What Godot imports (into .godot/imported): such a file that has no
	## loader was never imported.
	const IMPORTED: Array[String] = ["png", "jpg", "jpeg", "webp", "svg", "bmp", "tga", "exr", "hdr", "wav", "ogg", "mp3",
		"ttf", "otf", "woff", "woff2", "glb", "gltf", "obj", "fbx", "blend", "dae"]
	var _mutex := Mutex.new()
	var _items: Array[String] = []
	var _loads: Array[String] = [] # the first res:// paths that failed to load
	var _seen := {} # every such path (at most 1024)
	var _load_count := 0
	var _unimported := false
	var _loads_changed := false

	func _log_error(function: String, file: String, line: int, code: String, rationale: String,
			_editor_notify: bool, error_type: int, _script_backtraces: Array[ScriptBacktrace]) -> void:
		if error_type == ERROR_TYPE_ERROR:
			_note_load(rationale)
			return
		if error_type != ERROR_TYPE_SCRIPT:
			return
		var text := "%s:%d in %s(): %s" % [file, line, function, rationale if not rationale.is_empty() else code]
		_mutex.lock()
		if _items.size() < 16:
			_items.append(text)
		_mutex.unlock()

	# A resource that failed to load: the asset's path (the imported file
	# it lacks says the project is not imported).
	func _note_load(text: String) -> void:
		for prefix in LOAD_ERRORS:
			if not text.begins_with(prefix):
				continue
			var path := text.substr(prefix.length()).get_slice(" (", 0).strip_edges().trim_suffix(".")
			if not path.begins_with("res://"):
				return
			_mutex.lock()
			if path.begins_with("res://.godot/imported/") or (prefix.begins_with("No loader") and IMPORTED.has(path.get_extension().to_lower())):
				_unimported = true
				_loads_changed = true
			if not path.begins_with("res://.godot/") and not _seen.has(path) and _seen.size() < 1024:
				_seen[path] = true
				_load_count += 1
				if _loads.size() < 8:
					_loads.append(path)
				_loads_changed = true
			_mutex.unlock()
			return

	## Whether the load failures changed since the last call.
	func loads_changed() -> bool:
		_mutex.lock()
		var changed := _loads_changed
		_loads_changed = false
		_mutex.unlock()
		return changed

	## {"paths": the first paths, "count": how many, "unimported": bool}.
	func load_failures() -> Dictionary:
		_mutex.lock()
		var out := {"paths": _loads.duplicate(), "count": _load_count, "unimported": _unimported}
		_mutex.unlock()
		return out

	func take() -> Array[String]:
		_mutex.lock()
		var items := _items
		_items = []
		_mutex.unlock()
		return items
