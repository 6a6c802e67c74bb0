#!/bin/sh
# Builds C# Arena with Debian's Mono compiler (mcs, C# 7.2): the Cappy
# core, as the Unity package ships it, and the game's own files, into
# bin/arena.exe. Run it with mono bin/arena.exe (crosscode-mcp does, from
# .crosscode/capture.json).
set -eu
cd "$(dirname "$0")"
mkdir -p bin
mcs -langversion:7.2 -warnaserror -nologo -target:exe -out:bin/arena.exe \
  -r:System.dll -r:System.Core.dll \
  ../../adapters/unity/Runtime/Core/*.cs ./*.cs
