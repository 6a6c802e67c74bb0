// Reference declarations of exactly the Input System (com.unity.inputsystem,
// assembly Unity.InputSystem) members the package's Unity layer uses,
// written from the package's scripting reference. Nothing here runs. Each
// member carries the package version it first appeared in ([Since]); all of
// them are in the Input System versions Unity 2022.3 LTS and Unity 6 offer
// (1.7 and 1.8+; InputSystem.actions, the project-wide actions, needs 1.8,
// and the package uses it only then: CAPPY_PROJECT_WIDE_ACTIONS).
using System;
using System.Collections;
using System.Collections.Generic;
using UnityStubs;

namespace UnityEngine.InputSystem.Utilities
{
    [Since("1.0")]
    public struct ReadOnlyArray<TValue> : IReadOnlyList<TValue>
    {
        [Since("1.0")] public int Count { get { throw new NotSupportedException(); } }
        [Since("1.0")] public TValue this[int index] { get { throw new NotSupportedException(); } }
        public IEnumerator<TValue> GetEnumerator() { throw new NotSupportedException(); }
        IEnumerator IEnumerable.GetEnumerator() { throw new NotSupportedException(); }
    }
}

namespace UnityEngine.InputSystem.LowLevel
{
    [Since("1.0")]
    public struct InputEventPtr { }

    [Since("1.0")]
    public struct StateEvent
    {
        [Since("1.0")] public static Unity.Collections.NativeArray<byte> From(InputDevice device, out InputEventPtr eventPtr, Unity.Collections.Allocator allocator = Unity.Collections.Allocator.Temp) { throw new NotSupportedException(); }
    }
}

namespace UnityEngine.InputSystem
{
    using UnityEngine.InputSystem.LowLevel;
    using UnityEngine.InputSystem.Utilities;

    [Since("1.0")]
    public abstract class InputControl
    {
        [Since("1.0")] public string path { get { throw new NotSupportedException(); } }
    }

    [Since("1.0")]
    public abstract class InputControl<TValue> : InputControl where TValue : struct { }

    [Since("1.0")]
    public class InputDevice : InputControl
    {
        [Since("1.0")] public bool enabled { get { throw new NotSupportedException(); } }
    }

    [Since("1.0")] public class Keyboard : InputDevice { }
    [Since("1.0")] public class Gamepad : InputDevice { }
    [Since("1.0")] public class Pointer : InputDevice { }
    [Since("1.0")] public class Mouse : Pointer { }

    [Since("1.0")]
    public static class InputControlPath
    {
        [Since("1.0")] public static InputControl TryFindControl(InputControl control, string path, int indexInPath = 0) { throw new NotSupportedException(); }
    }

    [Since("1.0")]
    public static class InputControlExtensions
    {
        [Since("1.0")] public static void WriteValueIntoEvent<TValue>(this InputControl<TValue> control, TValue value, InputEventPtr eventPtr) where TValue : struct { throw new NotSupportedException(); }
    }

    [Since("1.0")]
    public enum InputActionType { Value = 0, Button = 1, PassThrough = 2 }

    [Since("1.0")]
    public struct InputBinding
    {
        [Since("1.0")] public string name { get { throw new NotSupportedException(); } }
        [Since("1.0")] public string effectivePath { get { throw new NotSupportedException(); } }
        [Since("1.0")] public bool isComposite { get { throw new NotSupportedException(); } }
        [Since("1.0")] public bool isPartOfComposite { get { throw new NotSupportedException(); } }
    }

    [Since("1.0")]
    public sealed class InputAction
    {
        [Since("1.0")] public string name { get { throw new NotSupportedException(); } }
        [Since("1.0")] public InputActionType type { get { throw new NotSupportedException(); } }
        [Since("1.0")] public string expectedControlType { get { throw new NotSupportedException(); } set { } }
        [Since("1.0")] public ReadOnlyArray<InputBinding> bindings { get { throw new NotSupportedException(); } }
        [Since("1.0")] public TValue ReadValue<TValue>() where TValue : struct { throw new NotSupportedException(); }
        [Since("1.1")] public bool IsPressed() { throw new NotSupportedException(); }
    }

    [Since("1.0")]
    public sealed class InputActionMap
    {
        [Since("1.0")] public string name { get { throw new NotSupportedException(); } }
        [Since("1.0")] public ReadOnlyArray<InputAction> actions { get { throw new NotSupportedException(); } }
    }

    [Since("1.0")]
    public class InputActionAsset : ScriptableObject
    {
        [Since("1.0")] public ReadOnlyArray<InputActionMap> actionMaps { get { throw new NotSupportedException(); } }
        [Since("1.0")] public InputAction FindAction(string actionNameOrId, bool throwIfNotFound = false) { throw new NotSupportedException(); }
    }

    [Since("1.0")]
    public class PlayerInput : MonoBehaviour
    {
        [Since("1.0")] public static ReadOnlyArray<PlayerInput> all { get { throw new NotSupportedException(); } }
        [Since("1.0")] public InputActionAsset actions { get { throw new NotSupportedException(); } set { } }
    }

    [Since("1.0")]
    public static class InputSystem
    {
        [Since("1.0")] public static TDevice AddDevice<TDevice>(string name = null) where TDevice : InputDevice { throw new NotSupportedException(); }
        [Since("1.0")] public static void EnableDevice(InputDevice device) { throw new NotSupportedException(); }
        [Since("1.0")] public static void DisableDevice(InputDevice device, bool keepSendingEvents = false) { throw new NotSupportedException(); }
        [Since("1.0")] public static ReadOnlyArray<InputDevice> devices { get { throw new NotSupportedException(); } }
        [Since("1.0")] public static void QueueEvent(InputEventPtr eventPtr) { throw new NotSupportedException(); }
        [Since("1.8")] public static InputActionAsset actions { get { throw new NotSupportedException(); } set { } }
    }
}
