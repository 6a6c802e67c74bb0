extends Node
## Prints FIRST_FRAME when the first frame is processed, then quits.


func _process(_delta: float) -> void:
	print("FIRST_FRAME")
	set_process(false)
	get_tree().quit()
