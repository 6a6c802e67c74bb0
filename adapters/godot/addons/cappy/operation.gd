extends RefCounted
## One operation the controller asked for: an authored scenario, a freeform
## recording or a replay. The game reads what to do from it and reports
## what happens through it:
##
##     op.emit_event("HIT", {"target": "boss", "damage": 12})
##     op.fail("HERO_DOWN", "the hero fell in wave 2")
##
## Its clock is the simulation's: physics frames since the operation
## started (for a recording or replay, since its first physics frame after
## the game's start callable returned). Each event's t is that time in ms
## divided by the presentation's timeScale, and its payload carries simT,
## the simulation time in ms, so a replay at another speed reports the
## same payloads.

## The controller asked a recording or replay to finish (stop), or the
## operation was cancelled.
signal stop_requested
## The operation was cancelled (by the controller or a lost connection):
## tear down; nothing more is reported.
signal cancelled
## The operation ended: status is "completed", "failed" or "cancelled".
signal ended(status: String)

## The controller's operation id.
var id := ""
## "scenario", "recording" or "replay".
var kind := ""
## The scenario's id (scenarios only).
var scenario := ""
## The scenario's parameters, checked, with defaults filled in; integer
## parameters are ints.
var params := {}
## "agent" when an agent plays this recording in steps (record_start's
## control): the game must not start its own player or autopilot then.
var control := ""
## The presentation (timeScale, camera, and the game's own keys).
var presentation := {}
## The presentation's time scale (1 when absent).
var time_scale := 1.0
## The presentation's camera name ("" for the game's own camera).
var camera := ""
## The seed of a recording or replay: seed the game's random number
## generators from it in the start callable (the addon seeds the global
## one with it too).
var rng_seed := 0
## What the operation reports with completed (a JSON object).
var summary := {}
## Events sent so far.
var events := 0

var _session: Object
var _prefix := ""
var _names := {} # event name -> its JSON string
var _tick_ms := 1000.0 / 60.0
var _t0_frame := -1
var _last_t := 0.0
var _active := true
var _stopping := false
var _cancelled := false


func _init(session: Object, op_id: String, op_kind: String) -> void:
	_session = session
	id = op_id
	kind = op_kind
	_prefix = "{\"type\":\"event\",\"op\":%s,\"t\":" % JSON.stringify(op_id)


## Sends one event: name (1 to 256 bytes), a payload of JSON values, and
## optionally how long the moment lasts in simulated ms. Returns false,
## sending nothing, once the operation is over or for an invalid event.
func emit_event(event: String, payload: Dictionary = {}, duration_ms: float = -1.0) -> bool:
	if not _active:
		return false
	var quoted: String = _names.get(event, "")
	if quoted.is_empty():
		var name_bytes := event.to_utf8_buffer().size()
		if name_bytes == 0 or name_bytes > 256:
			_session._note("an event whose name is %d bytes was dropped: a name is 1 to 256 bytes" % name_bytes)
			return false
		quoted = JSON.stringify(event)
		if _names.size() < 1024:
			_names[event] = quoted
	var sim := sim_time_ms()
	var t := maxf(snappedf(sim / time_scale, 0.001), _last_t)
	_last_t = t
	var text := _prefix + _number(t) + ",\"event\":" + quoted
	if duration_ms >= 0.0:
		text += ",\"durationMs\":" + _number(snappedf(duration_ms / time_scale, 0.001))
	if payload.has("simT"):
		text += ",\"payload\":" + JSON.stringify(payload) + "}"
	elif payload.is_empty():
		text += ",\"payload\":{\"simT\":" + _number(snappedf(sim, 0.001)) + "}}"
	else:
		text += ",\"payload\":{\"simT\":" + _number(snappedf(sim, 0.001)) + "," + JSON.stringify(payload).substr(1) + "}"
	if _session._send_event(self, text):
		events += 1
		return true
	return false


## Fails the operation with the game's own code and message.
func fail(code: String, message: String) -> void:
	_session._end_operation(self, "failed", code, message)


## Completes the operation now, merging summary into what it reports.
## A scenario also completes when its callable returns.
func complete(with_summary: Dictionary = {}) -> void:
	summary.merge(with_summary, true)
	_session._end_operation(self, "completed", "", "")


## Sends a frame now, beside the asked rate (spec section 7), when frames
## were asked for and the rate allows; reason says why (e.g. an event name).
func capture_frame(reason: String = "") -> void:
	if _active:
		_session._capture_frame(self, reason)


## Physics frames since the operation's clock started.
func tick() -> int:
	if _t0_frame < 0:
		return 0
	return maxi(Engine.get_physics_frames() - _t0_frame, 0)


## Simulation time in ms since the operation's clock started.
func sim_time_ms() -> float:
	return tick() * _tick_ms


## Presented time in ms: what the controller receives as t.
func presented_time_ms() -> float:
	return sim_time_ms() / time_scale


## Whether the operation still takes events.
func is_active() -> bool:
	return _active


## Whether stop (or cancel) was asked.
func is_stopping() -> bool:
	return _stopping


## Whether the operation was cancelled.
func is_cancelled() -> bool:
	return _cancelled


func _start_clock(tick_ms: float) -> void:
	_tick_ms = tick_ms
	_t0_frame = Engine.get_physics_frames()


# A physics frame in which the simulation was held (agent play, a
# replay's step picture): the clock does not move.
func _hold_frame() -> void:
	if _t0_frame >= 0:
		_t0_frame += 1


func _request_stop() -> void:
	if not _stopping:
		_stopping = true
		stop_requested.emit()


func _finish(status: String) -> void:
	if not _active:
		return
	_active = false
	if status == "cancelled":
		_cancelled = true
		_request_stop()
		cancelled.emit()
	ended.emit(status)


static func _number(f: float) -> String:
	if f == floorf(f) and absf(f) < 1e15:
		return str(int(f))
	return str(f)
