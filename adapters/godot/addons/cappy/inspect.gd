extends RefCounted
## inspect (spec section 11): a look at the game's state at any moment.
##
## A query is a node path and property names, as Godot writes a NodePath
## with subnames: "World" describes the node (class, children, script
## variables), "World:tick" is a property's value, "World:hero:hp" a key
## of it (Dictionary keys, Array indices, Vector2 x/y, an Object's
## properties). A relative path starts at the current scene, an absolute
## one at /root. The empty query answers what can be asked.
##
## Values are turned into JSON (vectors and colours as objects, nodes as
## their paths, other objects as their class) with bounded depth and
## length; an answer over 256 KiB is refused with VALUE_TOO_LARGE.

const MAX_VALUE_BYTES := 256 << 10
const MAX_DEPTH := 12
const MAX_ITEMS := 1000
const MAX_NODES := 200
const MAX_LISTED := 100
## The most values one answer visits.
const MAX_VALUES := 100000
const SYNTAX := "a node path (relative to the current scene, or absolute from /root) and optionally property names after colons, as a Godot NodePath: \"World\" describes the node, \"World:tick\" is a property, \"World:hero:hp\" a key, index or field inside it"


## Answers a query: {"value": JSON text} or {"error": {"code", "message"}}.
## cappy (the addon's node) is never inspected.
static func answer(tree: SceneTree, query: String, cappy: Node) -> Dictionary:
	var q := query.strip_edges()
	var scene := tree.current_scene if tree.current_scene != null else tree.root
	var value: Variant
	if q.is_empty():
		value = _catalogue(scene)
	else:
		var path := NodePath(q)
		var names: PackedStringArray = []
		for i in range(path.get_name_count()):
			names.append(path.get_name(i))
		var node_path := ("/" if path.is_absolute() else "") + "/".join(names)
		var node: Node = scene if node_path.is_empty() else (tree.root if path.is_absolute() else scene).get_node_or_null(NodePath(node_path))
		if node == null:
			return _error("UNKNOWN_QUERY", "no node %s under %s (ask the empty query for the scene's nodes)" % [node_path, scene.get_path()])
		if node == cappy or cappy.is_ancestor_of(node):
			return _error("UNKNOWN_QUERY", "the Cappy addon itself is not inspected")
		var budget := {"left": MAX_VALUES}
		if path.get_subname_count() == 0:
			value = _describe(node, scene, budget)
		else:
			var found := _walk(node, path, cappy)
			if found.has("error"):
				return found
			value = _json(found["value"], 0, budget)
	var text := JSON.stringify(value)
	var size := text.to_utf8_buffer().size()
	if size > MAX_VALUE_BYTES:
		return _error("VALUE_TOO_LARGE", "the value is %d bytes, more than %d: ask for a part of it (a key or index after another colon)" % [size, MAX_VALUE_BYTES])
	return {"value": text}


# The value at the path's subnames, from node.
static func _walk(node: Node, path: NodePath, cappy: Node) -> Dictionary:
	var v: Variant = node
	var at := str(node.name)
	for i in range(path.get_subname_count()):
		var key := path.get_subname(i)
		var next := _index(v, key)
		if next.is_empty():
			return _error("UNKNOWN_QUERY", "%s has no %s (a %s)" % [at, key, _type_name(v)])
		v = next["v"]
		at += ":" + key
		if v is Node and v != null and is_instance_valid(v) and (v == cappy or cappy.is_ancestor_of(v)):
			return _error("UNKNOWN_QUERY", "the Cappy addon itself is not inspected")
	return {"value": v}


# {"v": value} of v's key, or {} when it has none.
static func _index(v: Variant, key: String) -> Dictionary:
	match typeof(v):
		TYPE_OBJECT:
			if v == null or not is_instance_valid(v):
				return {}
			var o: Object = v
			if o is Node and (o as Node).has_node(NodePath(key)) and not (key in o):
				return {"v": (o as Node).get_node(NodePath(key))}
			if key in o:
				return {"v": o.get(key)}
		TYPE_DICTIONARY:
			var d: Dictionary = v
			if d.has(key):
				return {"v": d[key]}
			if d.has(StringName(key)):
				return {"v": d[StringName(key)]}
			if key.is_valid_int() and d.has(key.to_int()):
				return {"v": d[key.to_int()]}
		TYPE_ARRAY, TYPE_PACKED_BYTE_ARRAY, TYPE_PACKED_INT32_ARRAY, TYPE_PACKED_INT64_ARRAY, TYPE_PACKED_FLOAT32_ARRAY, \
		TYPE_PACKED_FLOAT64_ARRAY, TYPE_PACKED_STRING_ARRAY, TYPE_PACKED_VECTOR2_ARRAY, TYPE_PACKED_VECTOR3_ARRAY, TYPE_PACKED_COLOR_ARRAY:
			if key.is_valid_int():
				var i := key.to_int()
				if i >= 0 and i < v.size():
					return {"v": v[i]}
		_:
			var out: Variant = null
			var ok := false
			if v != null and typeof(v) != TYPE_STRING and typeof(v) != TYPE_STRING_NAME:
				var probe: Variant = _json(v, MAX_DEPTH - 1, {"left": 16})
				ok = probe is Dictionary and probe.has(key)
				if ok:
					out = v[key]
			if ok:
				return {"v": out}
	return {}


# What a node is: its path, class, script, children and script variables.
static func _describe(node: Node, scene: Node, budget: Dictionary) -> Dictionary:
	var d := {"path": str(node.get_path()), "class": node.get_class()}
	var script: Variant = node.get_script()
	if script is Script and not (script as Script).resource_path.is_empty():
		d["script"] = (script as Script).resource_path
	var children: Array = []
	for c in node.get_children():
		if children.size() == MAX_LISTED:
			children.append("(%d more)" % (node.get_child_count() - MAX_LISTED))
			break
		children.append(str(c.name))
	d["children"] = children
	var props := {}
	if node is Node2D or node is Node3D or node is Control:
		props["position"] = _json(node.get("position"), 1, budget)
	if node is CanvasItem or node is Node3D:
		props["visible"] = node.get("visible")
	for p: Dictionary in node.get_property_list():
		if p["usage"] & PROPERTY_USAGE_SCRIPT_VARIABLE and props.size() < MAX_LISTED:
			props[p["name"]] = _json(node.get(p["name"]), 1, budget)
	d["properties"] = props
	if node != scene and scene.is_ancestor_of(node):
		d["query"] = str(scene.get_path_to(node))
	return d


# What can be asked: the language and the current scene's nodes, each with
# its script variables.
static func _catalogue(scene: Node) -> Dictionary:
	var nodes: Array = []
	var queue: Array[Node] = [scene]
	var more := 0
	while not queue.is_empty():
		var n: Node = queue.pop_front()
		if nodes.size() == MAX_NODES:
			more += 1
			continue
		var entry := {"query": "." if n == scene else str(scene.get_path_to(n)), "class": n.get_class()}
		var script: Variant = n.get_script()
		if script is Script and not (script as Script).resource_path.is_empty():
			entry["script"] = (script as Script).resource_path
		var vars: Array = []
		for p: Dictionary in n.get_property_list():
			if p["usage"] & PROPERTY_USAGE_SCRIPT_VARIABLE and vars.size() < MAX_LISTED:
				vars.append(p["name"])
		if not vars.is_empty():
			entry["properties"] = vars
		nodes.append(entry)
		queue.append_array(n.get_children())
	var out := {"syntax": SYNTAX, "scene": str(scene.get_path()), "nodes": nodes,
		"examples": [], "note": "properties are the scripts' variables; any property of a node (position, visible, ...) can be asked too"}
	for e: Dictionary in nodes.slice(1, 4):
		var ex: String = e["query"]
		if e.has("properties"):
			ex += ":" + str(e["properties"][0])
		out["examples"].append(ex)
	if more > 0:
		out["moreNodes"] = more
	return out


## A Variant as JSON-ready data, bounded in depth and length.
static func _json(v: Variant, depth: int, budget: Dictionary) -> Variant:
	if depth > MAX_DEPTH:
		return "(deeper than %d)" % MAX_DEPTH
	budget["left"] -= 1
	if budget["left"] < 0:
		return "(more than %d values)" % MAX_VALUES
	match typeof(v):
		TYPE_NIL, TYPE_BOOL, TYPE_INT, TYPE_STRING:
			return v
		TYPE_FLOAT:
			return v if not (is_nan(v) or is_inf(v)) else str(v)
		TYPE_STRING_NAME, TYPE_NODE_PATH:
			return str(v)
		TYPE_VECTOR2, TYPE_VECTOR2I:
			return {"x": v.x, "y": v.y}
		TYPE_VECTOR3, TYPE_VECTOR3I:
			return {"x": v.x, "y": v.y, "z": v.z}
		TYPE_VECTOR4, TYPE_VECTOR4I, TYPE_QUATERNION:
			return {"x": v.x, "y": v.y, "z": v.z, "w": v.w}
		TYPE_COLOR:
			return {"r": v.r, "g": v.g, "b": v.b, "a": v.a}
		TYPE_RECT2, TYPE_RECT2I:
			return {"position": _json(v.position, depth + 1, budget), "size": _json(v.size, depth + 1, budget)}
		TYPE_DICTIONARY:
			var out := {}
			var n := 0
			for k: Variant in v:
				if n == MAX_ITEMS:
					out["(more)"] = "%d more keys" % (v.size() - MAX_ITEMS)
					break
				out[str(k)] = _json(v[k], depth + 1, budget)
				n += 1
			return out
		TYPE_ARRAY, TYPE_PACKED_BYTE_ARRAY, TYPE_PACKED_INT32_ARRAY, TYPE_PACKED_INT64_ARRAY, TYPE_PACKED_FLOAT32_ARRAY, \
		TYPE_PACKED_FLOAT64_ARRAY, TYPE_PACKED_STRING_ARRAY, TYPE_PACKED_VECTOR2_ARRAY, TYPE_PACKED_VECTOR3_ARRAY, TYPE_PACKED_COLOR_ARRAY, TYPE_PACKED_VECTOR4_ARRAY:
			var out: Array = []
			for i in range(mini(v.size(), MAX_ITEMS)):
				out.append(_json(v[i], depth + 1, budget))
			if v.size() > MAX_ITEMS:
				out.append("(%d more)" % (v.size() - MAX_ITEMS))
			return out
		TYPE_OBJECT:
			if v == null or not is_instance_valid(v):
				return null
			var o: Object = v
			if o is Node:
				return {"node": str((o as Node).get_path()) if (o as Node).is_inside_tree() else str((o as Node).name), "class": o.get_class()}
			if o is Resource and not (o as Resource).resource_path.is_empty():
				return {"resource": (o as Resource).resource_path, "class": o.get_class()}
			return {"class": o.get_class()}
	return str(v)


static func _type_name(v: Variant) -> String:
	if v is Object and v != null and is_instance_valid(v):
		return (v as Object).get_class()
	return type_string(typeof(v))


static func _error(code: String, message: String) -> Dictionary:
	return {"error": {"code": code, "message": message}}
