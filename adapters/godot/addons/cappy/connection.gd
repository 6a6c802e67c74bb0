extends RefCounted
## The WebSocket to the Cappy controller.
##
## A thread of its own polls the socket, sends hello as soon as it opens,
## answers ping at once, sends the scenario registry (and the actions) on
## welcome and the registry on list_scenarios, and queues every other
## message, decoded, for the main thread: the game stays responsive and its
## handshake completes while the main thread is busy (a slow first frame, a
## synchronous load) or the tree is paused, and a request arriving right
## behind welcome is never dropped. Sends come from either thread; one mutex
## guards the peer.

## The largest message either side may send (the protocol's 4 MiB).
const MAX_MESSAGE_BYTES := 4 << 20
## Above this many bytes waiting to be sent, a sender flushes first.
const HIGH_WATER_BYTES := 16 << 10
## How long a send waits for the controller to take queued bytes.
const SEND_TIMEOUT_MSEC := 10000
const PUMP_INTERVAL_USEC := 1000

var _peer := WebSocketPeer.new()
var _mutex := Mutex.new()
var _thread := Thread.new()
var _running := false
var _inbox: Array[Dictionary] = []
var _state := WebSocketPeer.STATE_CONNECTING
var _warnings: PackedStringArray = []
var _pongs := 0
var _hello := "" # the hello message, as JSON
var _hello_sent := false
var _registry := "" # the scenarios message, as JSON
var _actions := "" # the actions message, as JSON ("" without input)
var _welcomed := false


## Starts connecting to url and the pump thread.
func open(url: String) -> Error:
	_peer.inbound_buffer_size = MAX_MESSAGE_BYTES + (64 << 10)
	_peer.outbound_buffer_size = 2 * MAX_MESSAGE_BYTES
	_peer.max_queued_packets = 16384
	var err := _peer.connect_to_url(url)
	if err != OK:
		return err
	_running = true
	_thread.start(_pump_loop)
	return OK


## Stops the pump thread and closes the socket.
func close(code: int = 1000, reason: String = "") -> void:
	_mutex.lock()
	_running = false
	if _peer.get_ready_state() == WebSocketPeer.STATE_OPEN:
		_peer.close(code, reason)
		_peer.poll()
	_mutex.unlock()
	if _thread.is_started():
		_thread.wait_to_finish()


## The socket's state (WebSocketPeer.STATE_*), as of the last poll.
func state() -> int:
	_mutex.lock()
	var s := _state
	_mutex.unlock()
	return s


## Why the controller closed the socket, when it did.
func close_reason() -> String:
	_mutex.lock()
	var why := "%d %s" % [_peer.get_close_code(), _peer.get_close_reason()]
	_mutex.unlock()
	return why


## Whether a message waits for the main thread.
func has_messages() -> bool:
	_mutex.lock()
	var waiting := not _inbox.is_empty()
	_mutex.unlock()
	return waiting


## How many pings were answered (for diagnostics).
func pongs() -> int:
	_mutex.lock()
	var n := _pongs
	_mutex.unlock()
	return n


## Hands over the hello (sent as soon as the socket opens), the scenario
## registry and the actions (sent on welcome; "" for none), all as JSON.
func begin(hello: String, registry: String, actions: String) -> void:
	_mutex.lock()
	_hello = hello
	_registry = registry
	_actions = actions
	_mutex.unlock()


## Sets the actions (an actions message, as JSON), sending them at once
## when the controller welcomed this game already, else on welcome.
func set_actions(text: String) -> void:
	_mutex.lock()
	_actions = text
	if _welcomed:
		_send_locked(text)
	_mutex.unlock()


## Sets the scenario registry (a scenarios message, as JSON), sending it
## at once when the controller welcomed this game already, else on welcome.
func set_registry(text: String) -> void:
	_mutex.lock()
	_registry = text
	if _welcomed:
		_send_locked(text)
	_mutex.unlock()


## Returns the queued messages, in the order they arrived.
func take() -> Array[Dictionary]:
	_mutex.lock()
	var items := _inbox
	_inbox = []
	_mutex.unlock()
	return items


## Returns and clears the warnings of the pump thread.
func take_warnings() -> PackedStringArray:
	_mutex.lock()
	var w := _warnings
	_warnings = []
	_mutex.unlock()
	return w


## Sends one message (JSON text). Blocks while the controller applies
## back-pressure, up to SEND_TIMEOUT_MSEC; false when the socket is not
## open or does not drain.
func send(text: String) -> bool:
	_mutex.lock()
	var ok := _send_locked(text)
	_mutex.unlock()
	return ok


func _send_locked(text: String) -> bool:
	if _peer.get_ready_state() != WebSocketPeer.STATE_OPEN:
		return false
	var deadline := Time.get_ticks_msec() + SEND_TIMEOUT_MSEC
	while true:
		if _peer.get_current_outbound_buffered_amount() < HIGH_WATER_BYTES:
			var err := _peer.send_text(text)
			if err == OK:
				return true
			if err != ERR_OUT_OF_MEMORY and err != ERR_BUSY:
				return false
		_pump_locked()
		if _peer.get_ready_state() != WebSocketPeer.STATE_OPEN or Time.get_ticks_msec() > deadline:
			return false
		OS.delay_usec(100)
	return false


func _pump_loop() -> void:
	while true:
		_mutex.lock()
		if not _running:
			_mutex.unlock()
			return
		_pump_locked()
		_mutex.unlock()
		OS.delay_usec(PUMP_INTERVAL_USEC)


# Polls the socket: sends what is queued, reads what arrived, answers ping
# and queues the rest. The mutex is held.
func _pump_locked() -> void:
	_peer.poll()
	_state = _peer.get_ready_state()
	if _state == WebSocketPeer.STATE_OPEN and not _hello_sent and not _hello.is_empty():
		_hello_sent = true
		_peer.send_text(_hello)
	while _peer.get_available_packet_count() > 0:
		var packet := _peer.get_packet()
		if not _peer.was_string_packet():
			_warnings.append("ignoring a binary frame from the controller")
			continue
		var text := packet.get_string_from_utf8()
		var msg: Variant = JSON.parse_string(text)
		if not (msg is Dictionary) or not (msg.get("type") is String):
			_warnings.append("ignoring a controller message that is not a JSON object with a type: %s" % text.left(120))
			continue
		match msg["type"]:
			"ping":
				var nonce: Variant = msg.get("nonce", "")
				_peer.send_text(JSON.stringify({"type": "pong", "nonce": nonce if nonce is String else ""}))
				_pongs += 1
				continue
			"welcome":
				if not _welcomed and msg.get("protocol") is float and int(msg["protocol"]) == 1:
					_welcomed = true
					_peer.send_text(_registry)
					if not _actions.is_empty():
						_peer.send_text(_actions)
			"list_scenarios":
				if _welcomed:
					_peer.send_text(_registry)
					continue
		_inbox.append(msg)
