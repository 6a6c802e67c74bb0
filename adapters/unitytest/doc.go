// Package unitytest holds the tests of the Unity package (adapters/unity),
// kept outside it so that Unity imports none of them: the C# core's NUnit
// tests under Mono, the Unity layer compiled with mcs against reference
// declarations of the UnityEngine and Input System members it uses
// (stubs/), the package's layout as Unity reads it, and the core in a real
// game (examples/csharp-arena) against the real controller.
package unitytest
