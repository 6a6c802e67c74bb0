@:<<'::' 2>/dev/null
@echo off
rem crosscode-hook CLIENT EVENT: runs `crosscode-mcp hook CLIENT EVENT` with the
rem hook input on stdin, for the hooks of the crosscode plugin and extension.
rem One file for both shells: cmd.exe runs this part (the first line is a
rem label to it, @ silencing its echo), sh and bash skip it as a here-document
rem (their first command, @:, is not found: its error goes to /dev/null).
rem The binary is, in order: %CROSSCODE_MCP_BIN%; the one the crosscode-mcp
rem server last ran from (it writes its path to
rem %LOCALAPPDATA%\crosscode-mcp\binary at every start, so an npx install is
rem found too); crosscode-mcp on PATH. With none, the edit is allowed and
rem stderr says why: a hook never blocks an agent for want of the binary.
setlocal
set "ccbin=%CROSSCODE_MCP_BIN%"
if not defined ccbin if exist "%LOCALAPPDATA%\crosscode-mcp\binary" set /p ccbin=<"%LOCALAPPDATA%\crosscode-mcp\binary"
if defined ccbin if not exist "%ccbin%" set "ccbin="
if not defined ccbin for /f "delims=" %%i in ('where crosscode-mcp 2^>nul') do if not defined ccbin set "ccbin=%%i"
if not defined ccbin (
  echo crosscode-hook: no crosscode-mcp binary found: not in CROSSCODE_MCP_BIN, not started from this machine's crosscode server yet, not on PATH. The edit is allowed unchecked. Start the agent once with the crosscode MCP server, or install crosscode-mcp on your PATH. 1>&2
  exit /b 0
)
set "CROSSCODE_HOOK_VIA=plugin"
"%ccbin%" hook %*
exit /b %errorlevel%
::
# crosscode-hook CLIENT EVENT (POSIX part; see the comment above). No
# shebang: the shell that runs this file runs it as a script.
ccbin=${CROSSCODE_MCP_BIN:-}
if [ -z "$ccbin" ]; then
  for ccrec in "${XDG_CACHE_HOME:-$HOME/.cache}/crosscode-mcp/binary" "$HOME/Library/Caches/crosscode-mcp/binary" ${LOCALAPPDATA:+"$LOCALAPPDATA/crosscode-mcp/binary"}; do
    if [ -r "$ccrec" ]; then
      IFS= read -r ccbin < "$ccrec" || :
      [ -n "$ccbin" ] && [ -x "$ccbin" ] && break
      ccbin=
    fi
  done
fi
if [ -z "$ccbin" ]; then
  ccbin=$(command -v crosscode-mcp 2>/dev/null) || ccbin=
fi
if [ -z "$ccbin" ]; then
  echo "crosscode-hook: no crosscode-mcp binary found: not in CROSSCODE_MCP_BIN, not started from this machine's crosscode server yet, not on PATH. The edit is allowed unchecked. Start the agent once with the crosscode MCP server, or install crosscode-mcp on your PATH." >&2
  exit 0
fi
# The hook client next to it (crosscode-hook, in the release archives and
# the npm packages) starts in a fraction of the time and asks the agent's
# MCP server, falling back to `crosscode-mcp hook` itself.
cchook=${ccbin%/*}/crosscode-hook
if [ "$cchook" != "$ccbin" ] && [ -f "$cchook" ] && [ -x "$cchook" ]; then
  CROSSCODE_HOOK_VIA=plugin exec "$cchook" "$@"
fi
CROSSCODE_HOOK_VIA=plugin exec "$ccbin" hook "$@"
