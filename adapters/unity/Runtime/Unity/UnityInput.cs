using System.Collections.Generic;
#if CAPPY_INPUT_SYSTEM && ENABLE_INPUT_SYSTEM
using UnityEngine;
using UnityEngine.InputSystem;
using UnityEngine.InputSystem.LowLevel;
#endif

namespace Crosscode.Cappy.Unity
{
    /// <summary>
    /// The game's input for an agent: the project's Input System actions
    /// (the project-wide actions, else the first PlayerInput's), each offered
    /// as a button, axis or axis2d (the core's InputPlan), pressed through a
    /// keyboard, a gamepad and a mouse the package adds, so the game reads
    /// them as a player's; the mouse is the pointer. While an agent plays,
    /// and while a replay runs, the player's own devices are disabled.
    /// </summary>
    public static class UnityInput
    {
        /// <summary>
        /// The input part, or null when the project has no Input System (its
        /// name, and the fix, are added to missing).
        /// </summary>
        public static IGameInput Create(List<string> missing)
        {
#if CAPPY_INPUT_SYSTEM && ENABLE_INPUT_SYSTEM
            var input = new AgentDevices();
            if (input.Source == null)
                missing.Add("no Input System actions were found (neither the project-wide actions of Project Settings > Input System Package, nor a PlayerInput's): an agent has the pointer only");
            return input;
#else
            missing.Add("this project does not use the Input System (com.unity.inputsystem, with Player > Active Input Handling set to Input System Package or Both): an agent cannot press the game's input; the old Input Manager cannot be driven by the package");
            return null;
#endif
        }

#if CAPPY_INPUT_SYSTEM && ENABLE_INPUT_SYSTEM
        sealed class AgentDevices : IGameInput
        {
            readonly Dictionary<string, InputDevice> devices = new Dictionary<string, InputDevice>();
            readonly Dictionary<string, Dictionary<string, ControlWrite>> desired = new Dictionary<string, Dictionary<string, ControlWrite>>();
            readonly List<InputDevice> disabled = new List<InputDevice>();
            InputPlan plan;

            public InputActionAsset Source;

            public AgentDevices()
            {
                devices["Keyboard"] = InputSystem.AddDevice<Keyboard>("CappyKeyboard");
                devices["Gamepad"] = InputSystem.AddDevice<Gamepad>("CappyGamepad");
                devices["Mouse"] = InputSystem.AddDevice<Mouse>("CappyMouse");
                foreach (var k in devices.Keys) desired[k] = new Dictionary<string, ControlWrite>();
                Source = ProjectActions();
                plan = Plan();
            }

            static InputActionAsset ProjectActions()
            {
#if CAPPY_PROJECT_WIDE_ACTIONS
                if (InputSystem.actions != null) return InputSystem.actions;
#endif
                foreach (var p in PlayerInput.all)
                    if (p.actions != null) return p.actions;
                return null;
            }

            InputPlan Plan()
            {
                var sources = new List<ActionSource>();
                if (Source != null)
                    foreach (var map in Source.actionMaps)
                        foreach (var a in map.actions)
                        {
                            var s = new ActionSource { Map = map.name, Name = a.name, Type = a.type.ToString(), ControlType = a.expectedControlType };
                            foreach (var b in a.bindings)
                                s.Bindings.Add(new BindingSource { Path = b.effectivePath, IsComposite = b.isComposite, IsPartOfComposite = b.isPartOfComposite, Part = b.name });
                            sources.Add(s);
                        }
                return InputPlan.Build(sources, Resolve, true);
            }

            // Which of the package's devices has a control at path.
            string Resolve(string path)
            {
                foreach (var kv in devices)
                    if (InputControlPath.TryFindControl(kv.Value, path) != null) return kv.Key;
                return null;
            }

            public IList<GameAction> Actions()
            {
                if (Source == null) Source = ProjectActions();
                plan = Plan();
                return plan.Actions;
            }

            public void Apply(IList<InputValue> changes)
            {
                var touched = new HashSet<string>();
                foreach (var v in changes)
                    foreach (var w in plan.Writes(v))
                    {
                        desired[w.Device][w.Path] = w;
                        touched.Add(w.Device);
                    }
                foreach (var d in touched) Queue(d);
            }

            public void ReleaseAll()
            {
                foreach (var w in plan.Rest()) desired[w.Device][w.Path] = w;
                foreach (var d in devices.Keys) Queue(d);
                foreach (var d in desired.Values) d.Clear();
            }

            // One state event per device with every control the agent set,
            // processed at the next frame's input update, as a player's is.
            void Queue(string name)
            {
                var device = devices[name];
                InputEventPtr ptr;
                using (StateEvent.From(device, out ptr))
                {
                    foreach (var w in desired[name].Values)
                    {
                        var control = InputControlPath.TryFindControl(device, w.Path);
                        var vector = control as InputControl<Vector2>;
                        var scalar = control as InputControl<float>;
                        if (vector != null)
                        {
                            float y = (float)w.Y;
                            if (name == "Mouse") y = Screen.height - 1 - y; // Unity's screen starts at the bottom
                            vector.WriteValueIntoEvent(new Vector2((float)w.X, y), ptr);
                        }
                        else if (scalar != null) scalar.WriteValueIntoEvent((float)w.X, ptr);
                    }
                    InputSystem.QueueEvent(ptr);
                }
            }

            public void AgentOnly(bool on)
            {
                if (on)
                {
                    foreach (var d in InputSystem.devices)
                        if (d.enabled && !devices.ContainsValue(d)) disabled.Add(d);
                    foreach (var d in disabled) InputSystem.DisableDevice(d);
                }
                else
                {
                    foreach (var d in disabled) InputSystem.EnableDevice(d);
                    disabled.Clear();
                }
            }

            public void Sample(IDictionary<string, InputValue> into)
            {
                foreach (var a in plan.Actions)
                {
                    var s = plan.SourceOf(a.Name);
                    var action = s == null || Source == null ? null : Source.FindAction(s.Map + "/" + s.Name);
                    if (action == null) continue;
                    var v = new InputValue { Name = a.Name, Kind = a.Kind };
                    switch (a.Kind)
                    {
                        case ActionKind.Button: v.Pressed = action.IsPressed(); break;
                        case ActionKind.Axis: v.Value = Mathf.Clamp(action.ReadValue<float>(), -1, 1); break;
                        case ActionKind.Axis2D:
                            var xy = action.ReadValue<Vector2>();
                            v.X = Mathf.Clamp(xy.x, -1, 1);
                            v.Y = Mathf.Clamp(xy.y, -1, 1);
                            break;
                        default: continue;
                    }
                    into[a.Name] = v;
                }
            }
        }
#endif
    }
}
