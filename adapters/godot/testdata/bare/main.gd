extends Node
## Prints FIRST_FRAME and the wall-clock time (unix ms) when the first frame
## is processed, then quits.


func _process(_delta: float) -> void:
	print("FIRST_FRAME %d" % roundi(Time.get_unix_time_from_system() * 1000.0))
	set_process(false)
	get_tree().quit()
