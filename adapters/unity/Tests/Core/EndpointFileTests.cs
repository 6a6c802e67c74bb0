using System;
using System.IO;
using System.Net;
using System.Net.Sockets;
using NUnit.Framework;

namespace Crosscode.Cappy.Tests
{
    // How Play mode in the Editor finds crosscode-mcp: the endpoint file in
    // the repository's git common dir, found from the project's folder.
    [TestFixture]
    public class EndpointFileTests
    {
        string root;

        [SetUp]
        public void Make() { root = Path.Combine(Path.GetTempPath(), "cappy-ep-" + Guid.NewGuid().ToString("N")); Directory.CreateDirectory(root); }

        [TearDown]
        public void Remove() { Directory.Delete(root, true); }

        string Dir(params string[] parts)
        {
            string p = root;
            foreach (var x in parts) p = Path.Combine(p, x);
            Directory.CreateDirectory(p);
            return p;
        }

        [Test]
        public void AProjectInASubfolderOfARepository()
        {
            string git = Dir("repo", ".git");
            string project = Dir("repo", "games", "MyGame");
            Assert.AreEqual(git, EndpointFile.GitCommonDir(project));
            Assert.AreEqual(Path.Combine(git, "crosscode", "cappy-endpoint.json"), EndpointFile.Locate(project, null));
            Assert.AreEqual(Path.Combine(root, "data", "cappy-endpoint.json"), EndpointFile.Locate(project, Path.Combine(root, "data")), "--data elsewhere, named in the settings");
        }

        [Test]
        public void AWorktreeUsesItsMainRepositorysCommonDir()
        {
            string main = Dir("main", ".git");
            string wtGit = Dir("main", ".git", "worktrees", "feature");
            File.WriteAllText(Path.Combine(wtGit, "commondir"), "../..\n");
            string wt = Dir("feature");
            File.WriteAllText(Path.Combine(wt, ".git"), "gitdir: " + wtGit + "\n");
            string project = Dir("feature", "Unity");
            Assert.AreEqual(Path.GetFullPath(main), EndpointFile.GitCommonDir(project));
            // A relative gitdir too.
            File.WriteAllText(Path.Combine(wt, ".git"), "gitdir: ../main/.git/worktrees/feature\n");
            Assert.AreEqual(Path.GetFullPath(main), EndpointFile.GitCommonDir(project));
        }

        [Test]
        public void NoRepository()
        {
            Assert.IsNull(EndpointFile.Locate(Dir("loose"), null), "no .git above the temp folder");
            string ep, tok, why;
            Assert.IsFalse(EndpointFile.Find(Dir("loose2"), Path.Combine(root, "nodata"), out ep, out tok, out why));
            StringAssert.Contains("not running", why);
        }

        [Test]
        public void AStaleFileIsSkippedAndALiveOneRead()
        {
            string data = Dir("data");
            string path = Path.Combine(data, EndpointFile.Name);
            // A port nothing listens on: take one, then close it.
            var l = new TcpListener(IPAddress.Loopback, 0);
            l.Start();
            int port = ((IPEndPoint)l.LocalEndpoint).Port;
            File.WriteAllText(path, "{\"endpoint\":\"ws://127.0.0.1:" + port + "\",\"token\":\"t0k\"}");
            string ep, tok, why;
            Assert.IsTrue(EndpointFile.Find(root, data, out ep, out tok, out why), why);
            Assert.AreEqual("t0k", tok);
            l.Stop();
            Assert.IsFalse(EndpointFile.Find(root, data, out ep, out tok, out why));
            StringAssert.Contains("stale", why);
            Assert.IsNull(ep);
            File.WriteAllText(path, "{\"endpoint\":\"ws://127.0.0.1:1\"}");
            Assert.IsFalse(EndpointFile.Find(root, data, out ep, out tok, out why));
            StringAssert.Contains("no endpoint and token", why);
        }
    }
}
