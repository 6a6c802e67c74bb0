@tool
extends EditorPlugin
## Enabling the plugin registers the Cappy autoload; disabling removes it.

const AUTOLOAD_NAME := "Cappy"
const AUTOLOAD_PATH := "res://addons/cappy/cappy.gd"


func _enable_plugin() -> void:
	add_autoload_singleton(AUTOLOAD_NAME, AUTOLOAD_PATH)


func _disable_plugin() -> void:
	remove_autoload_singleton(AUTOLOAD_NAME)
