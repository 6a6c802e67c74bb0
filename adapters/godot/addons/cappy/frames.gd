extends RefCounted
## Frames (spec section 7): pictures of the root viewport, sent at the rate
## an operation asked for, on the operation's presented clock, as JPEG or
## PNG at most maxWidth wide and at most 1 MiB. Only when the engine
## renders: under --headless Godot draws nothing, so frames are not
## advertised there.

const MAX_FRAME_BYTES := 1 << 20
const JPEG_QUALITY := 0.8

var _cappy: Node
var _available := false
var _op: RefCounted
var _interval_ms := 0.0
var _max_width := 640
var _mime := "image/jpeg"
var _next_t := 0.0
var _last_t := -INF
var _step_done := Callable() # a step picture is due at the next draw
var _drawn := false # a draw since the game last changed (changed())


## Connects to the renderer, when there is one.
func setup(cappy: Node) -> void:
	_cappy = cappy
	_available = DisplayServer.get_name() != "headless"
	if _available:
		RenderingServer.frame_post_draw.connect(_on_frame_post_draw)


## Whether this process renders (and so advertises frames).
func available() -> bool:
	return _available


## Starts sending frames for op, when it asked for them.
func begin(op: RefCounted) -> void:
	_op = null
	if not _available or not op.has_meta("frames"):
		return
	var f: Dictionary = op.get_meta("frames")
	_op = op
	_interval_ms = 1000.0 / float(f["fps"])
	_max_width = int(f["max_width"])
	_mime = f["mime"]
	_next_t = 0.0
	_last_t = -INF


## Stops sending frames.
func end() -> void:
	_op = null
	_step_done = Callable()


## Whether op asked for frames (and this process renders them).
func active_for(op: RefCounted) -> bool:
	return _op != null and op == _op


## The width of op's frames at full size: the root viewport's, at most
## maxWidth (0 when op asked for none).
func width_for(op: RefCounted) -> int:
	if not active_for(op):
		return 0
	return mini(int(_cappy.get_viewport().get_visible_rect().size.x), _max_width)


## Sends a frame with reason "step" at the next draw (beside the rate),
## then calls done. The addon asks for it as the step's last game frame
## runs, so the draw that follows shows where the step ended (a replay
## asks at the same game frame, and gets the same picture); a look asks
## while the game is held (held), and takes the last draw's when that one
## came after the game last changed.
func step_picture(op: RefCounted, done: Callable, held: bool = false) -> void:
	if not active_for(op):
		done.call()
		return
	if held and _drawn:
		# The game is held and the last draw shows it: no need to wait.
		_step_now(done)
		return
	_step_done = done


## Says the game may change from now on (it runs, or an operation's start
## set it up): the last draw may no longer show it.
func changed() -> void:
	_drawn = false


## A frame beside the rate, when the rate allows (at most twice the asked
## rate in all).
func extra(op: RefCounted, reason: String) -> void:
	if op != _op or _op == null:
		return
	var t: float = _op.presented_time_ms()
	if t - _last_t >= _interval_ms / 2.0:
		_send(t, reason)


## Whether a step picture waits for a draw.
func waiting() -> bool:
	return _step_done.is_valid()


## Gives up on the step picture due (none was drawn): calls its done.
func skip_step_picture() -> void:
	if _step_done.is_valid():
		var done := _step_done
		_step_done = Callable()
		done.call()


func _on_frame_post_draw() -> void:
	if _op == null or not _op.is_active():
		return
	var t: float = _op.presented_time_ms()
	_drawn = true
	if _step_done.is_valid():
		var done := _step_done
		_step_done = Callable()
		_step_now(done)
		return
	if t < _next_t:
		return
	_send(t, "")
	_next_t = (floorf(t / _interval_ms) + 1.0) * _interval_ms


func _step_now(done: Callable) -> void:
	var t: float = _op.presented_time_ms()
	_send(t, "step")
	_next_t = maxf(_next_t, (floorf(t / _interval_ms) + 1.0) * _interval_ms)
	done.call()


func _send(t: float, reason: String) -> void:
	var img := _cappy.get_viewport().get_texture().get_image()
	if img == null or img.is_empty():
		return
	if img.get_width() > _max_width:
		var h := maxi(1, roundi(img.get_height() * float(_max_width) / img.get_width()))
		img.resize(_max_width, h, Image.INTERPOLATE_BILINEAR)
	var data := _encode(img, JPEG_QUALITY)
	while data.size() > MAX_FRAME_BYTES and img.get_width() > 16:
		img.resize(img.get_width() / 2, maxi(1, img.get_height() / 2), Image.INTERPOLATE_BILINEAR)
		data = _encode(img, 0.6)
	if data.size() > MAX_FRAME_BYTES:
		return
	var msg := {"type": "frame", "op": _op.id, "t": snappedf(t, 0.001), "mime": _mime,
		"width": img.get_width(), "height": img.get_height(), "data": Marshalls.raw_to_base64(data)}
	if not reason.is_empty():
		msg["reason"] = reason.left(128)
	_last_t = t
	_cappy._send(msg)


func _encode(img: Image, quality: float) -> PackedByteArray:
	if _mime == "image/png":
		return img.save_png_to_buffer()
	if img.get_format() != Image.FORMAT_RGB8:
		img.convert(Image.FORMAT_RGB8)
	return img.save_jpg_to_buffer(quality)
