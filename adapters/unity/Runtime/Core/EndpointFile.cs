using System;
using System.IO;
using System.Net.Sockets;

namespace Crosscode.Cappy
{
    /// <summary>
    /// Where a game that crosscode-mcp did not launch (Unity's Play mode in
    /// the Editor) finds the controller: crosscode-mcp writes
    /// <c>{"endpoint", "token"}</c> to <c>cappy-endpoint.json</c> in its
    /// data folder, <c>&lt;git common dir&gt;/crosscode</c> unless its
    /// <c>--data</c> says otherwise, when its capture config launches
    /// nothing. The file is found by walking up from the project's folder to
    /// the repository's git directory (worktrees, whose <c>.git</c> is a
    /// file, and projects in a subfolder included).
    /// </summary>
    public static class EndpointFile
    {
        /// <summary>The file's name in the data folder.</summary>
        public const string Name = "cappy-endpoint.json";

        /// <summary>
        /// The endpoint file's path: in dataDir when given (the server's
        /// --data), else in the crosscode folder of the git common dir found
        /// from start upwards; null when start is in no git repository.
        /// </summary>
        public static string Locate(string start, string dataDir)
        {
            if (!string.IsNullOrEmpty(dataDir)) return Path.Combine(dataDir, Name);
            string common = GitCommonDir(start);
            return common == null ? null : Path.Combine(Path.Combine(common, "crosscode"), Name);
        }

        /// <summary>The git common dir of the repository holding dir (a worktree's is its main repository's), or null.</summary>
        public static string GitCommonDir(string dir)
        {
            for (var d = new DirectoryInfo(Path.GetFullPath(dir)); d != null; d = d.Parent)
            {
                string dotGit = Path.Combine(d.FullName, ".git");
                string gitDir = null;
                if (Directory.Exists(dotGit)) gitDir = dotGit;
                else if (File.Exists(dotGit))
                {
                    // A worktree or submodule: "gitdir: <path>".
                    string line = File.ReadAllText(dotGit).Trim();
                    if (!line.StartsWith("gitdir:", StringComparison.Ordinal)) continue;
                    string p = line.Substring(7).Trim();
                    gitDir = Path.GetFullPath(Path.IsPathRooted(p) ? p : Path.Combine(d.FullName, p));
                }
                if (gitDir == null) continue;
                string commondir = Path.Combine(gitDir, "commondir");
                if (File.Exists(commondir))
                {
                    string c = File.ReadAllText(commondir).Trim();
                    return Path.GetFullPath(Path.IsPathRooted(c) ? c : Path.Combine(gitDir, c));
                }
                return gitDir;
            }
            return null;
        }

        /// <summary>Reads an endpoint file; false with why when it cannot.</summary>
        public static bool Read(string path, out string endpoint, out string token, out string why)
        {
            endpoint = token = why = null;
            string text;
            try { text = File.ReadAllText(path); }
            catch (Exception e) { why = "cannot read " + path + ": " + e.Message; return false; }
            JsonObject o;
            try { o = Json.Parse(text) as JsonObject; }
            catch (FormatException e) { why = path + " is not JSON: " + e.Message; return false; }
            endpoint = Json.Str(o, "endpoint");
            token = Json.Str(o, "token");
            if (string.IsNullOrEmpty(endpoint) || string.IsNullOrEmpty(token)) { why = path + " has no endpoint and token"; return false; }
            return true;
        }

        /// <summary>
        /// Whether something listens at the endpoint (a stale file names a
        /// port nothing listens on any more: crosscode-mcp died without
        /// removing it).
        /// </summary>
        public static bool Listening(string endpoint, int timeoutMs = 1000)
        {
            Uri u;
            if (!Uri.TryCreate(endpoint, UriKind.Absolute, out u)) return false;
            try
            {
                using (var c = new TcpClient())
                {
                    var connect = c.BeginConnect(u.Host, u.Port, null, null);
                    if (!connect.AsyncWaitHandle.WaitOne(timeoutMs)) return false;
                    c.EndConnect(connect);
                    return true;
                }
            }
            catch (Exception)
            {
                return false;
            }
        }

        /// <summary>
        /// The endpoint and token for a game started by hand: from the file
        /// when it is there and something listens; else null, with why (a
        /// stale file is said once by the caller, then skipped).
        /// </summary>
        public static bool Find(string start, string dataDir, out string endpoint, out string token, out string why)
        {
            endpoint = token = null;
            string path = Locate(start, dataDir);
            if (path == null) { why = "no git repository above " + start + " (set the data folder in Cappy's settings)"; return false; }
            if (!File.Exists(path)) { why = "no " + path + ": crosscode-mcp is not running for this repository, or its capture config launches the game"; return false; }
            if (!Read(path, out endpoint, out token, out why)) return false;
            if (!Listening(endpoint))
            {
                why = "the endpoint file " + path + " is stale: nothing listens at " + endpoint + " (crosscode-mcp stopped without removing it)";
                endpoint = token = null;
                return false;
            }
            return true;
        }
    }
}
