#!/usr/bin/env node
// The npm launcher of crosscode-mcp (spec section 13). It holds no code of
// the server: it runs the native binary from the one optional dependency
// @crosscode/mcp-<platform>-<arch> that npm installed for this machine
// (npm skips the others by their "os" and "cpu" fields), so nothing is
// downloaded at install time. Stdin, stdout and stderr are the child's own
// (stdout is the MCP stream: this file never writes to it), signals are
// passed on, and the launcher ends the way the child ended.
//
// CROSSCODE_MCP_BINARY=/path/to/crosscode-mcp runs that binary instead
// (for debugging a build of your own through an MCP client's npx config).
//
// CommonJS for Node 18+, no dependencies.
'use strict';

const { spawn } = require('child_process');
const os = require('os');
const path = require('path');

const pkg = `@crosscode/mcp-${process.platform}-${process.arch}`;
const supported = ['linux', 'darwin', 'win32'].includes(process.platform) && ['x64', 'arm64'].includes(process.arch);

/** @returns {string} the path of the binary to run; exits when there is none. */
function findBinary() {
  if (process.env.CROSSCODE_MCP_BINARY) return process.env.CROSSCODE_MCP_BINARY;
  try {
    const dir = path.dirname(require.resolve(`${pkg}/package.json`));
    return path.join(dir, 'bin', process.platform === 'win32' ? 'crosscode-mcp.exe' : 'crosscode-mcp');
  } catch (err) {
    if (err.code !== 'MODULE_NOT_FOUND') throw err;
  }
  const version = require('../package.json').version;
  const lines = [`crosscode-mcp: no binary for this platform (${process.platform} ${process.arch}).`];
  if (supported) {
    const go = { linux: 'linux', darwin: 'darwin', win32: 'windows', x64: 'amd64', arm64: 'arm64' };
    const ext = process.platform === 'win32' ? 'zip' : 'tar.gz';
    lines.push(
      `The npm package crosscode-mcp runs the binary from its optional dependency ${pkg}@${version},`,
      'which npm did not install: install again without --omit=optional (or --no-optional,',
      'or omit=optional in .npmrc), from a registry that has the package.',
      'Other ways to install it:',
      `  - the release archive crosscode-mcp_${version}_${go[process.platform]}_${go[process.arch]}.${ext}`,
      '    from https://github.com/crosscode/crosscode-mcp/releases',
    );
  } else {
    lines.push(
      'The npm packages hold binaries for linux, darwin and win32 on x64 and arm64 only.',
      'Other ways to install it:',
    );
  }
  lines.push(
    '  - with Go 1.26 or newer: go install github.com/crosscode/crosscode-mcp/cmd/crosscode-mcp@latest',
    'or set CROSSCODE_MCP_BINARY to the path of a crosscode-mcp binary.',
  );
  process.stderr.write(lines.join('\n') + '\n');
  process.exit(1);
}

const binary = findBinary();
const child = spawn(binary, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });

// Pass these on to the child and let it decide how to end; the launcher
// ends when the child does. On Windows the console sends Ctrl+C and close
// events to the child itself, and kill() would terminate it at once: there
// the launcher only keeps waiting for it.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP'];
/** @param {NodeJS.Signals} signal */
function forward(signal) {
  if (process.platform === 'win32') return;
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
}
for (const signal of forwarded) process.on(signal, forward);

child.on('error', (err) => {
  process.stderr.write(`crosscode-mcp: cannot run ${binary}: ${err.message}\n`);
  process.exit(1);
});

child.on('exit', (code, signal) => {
  if (signal === null) process.exit(code === null ? 1 : code);
  // The child died of a signal: die of the same one, so whoever started
  // the launcher sees what happened. Our handlers must not catch it.
  for (const s of forwarded) process.removeListener(s, forward);
  try {
    process.kill(process.pid, signal);
  } catch {
    // not a signal this platform can raise
  }
  // Still here (a signal that does not terminate, or Windows): the shell's
  // convention for "killed by a signal".
  setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 100);
});
