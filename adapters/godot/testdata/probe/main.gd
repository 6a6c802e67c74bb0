extends Node
## Scenarios that misbehave, for the addon's tests; no freeform play and
## no cameras.

const CappyOperation := preload("res://addons/cappy/operation.gd")


func _ready() -> void:
	print("cappy enabled=", Cappy.is_enabled())
	if OS.get_environment("PROBE_QUIT") == "1":
		get_tree().quit()
		return
	Cappy.register_scenario("script_error", _script_error, {"await": {"type": "boolean", "default": true}})
	Cappy.register_scenario("paused", _paused)
	Cappy.register_scenario("required", _required, {"level": {"type": "string", "required": true}})


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
