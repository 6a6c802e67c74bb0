using System;
using System.Collections.Concurrent;
using System.IO;
using System.Net.WebSockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace Crosscode.Cappy
{
    /// <summary>How the core talks to the controller: in order, from any thread.</summary>
    public interface ITransport
    {
        /// <summary>Queues one text message; false when the connection is gone or it is over 4 MiB.</summary>
        bool Send(string text);
        /// <summary>Closes the connection (normal closure).</summary>
        void Close(string reason);
    }

    /// <summary>
    /// The WebSocket to the controller (System.Net.WebSockets.ClientWebSocket).
    /// It reads on a task of its own from the moment the socket opens,
    /// reassembling each message until its end and refusing one over 4 MiB,
    /// and hands each to OnMessage on that task; it sends from one thread
    /// of its own, one message at a time (ClientWebSocket allows one send
    /// at a time, and frames, events and pongs come from different
    /// threads). It sends no Origin header and no keep-alive pings of its
    /// own (the controller pings).
    /// </summary>
    public sealed class Connection : ITransport, IDisposable
    {
        readonly ClientWebSocket ws = new ClientWebSocket();
        readonly BlockingCollection<byte[]> outbox = new BlockingCollection<byte[]>();
        readonly CancellationTokenSource stop = new CancellationTokenSource();
        readonly ICappyLog log;
        int closed;
        Thread sender;
        Task reader;

        /// <summary>Each message read, on the reading task.</summary>
        public Action<string> OnMessage;
        /// <summary>Once, when the connection ends, with why.</summary>
        public Action<string> OnClosed;

        /// <summary>A connection, not yet open.</summary>
        public Connection(ICappyLog log)
        {
            this.log = log;
            ws.Options.KeepAliveInterval = TimeSpan.Zero;
        }

        /// <summary>Whether the socket is open.</summary>
        public bool IsOpen { get { return ws.State == WebSocketState.Open && Volatile.Read(ref closed) == 0; } }

        /// <summary>
        /// Opens the socket (within timeout), then starts reading and the
        /// sender. first, when given, is queued before anything else.
        /// </summary>
        public async Task OpenAsync(Uri endpoint, TimeSpan timeout, string first)
        {
            using (var cts = CancellationTokenSource.CreateLinkedTokenSource(stop.Token))
            {
                cts.CancelAfter(timeout);
                await ws.ConnectAsync(endpoint, cts.Token).ConfigureAwait(false);
            }
            NoDelay(ws, 0);
            if (first != null) Send(first);
            sender = new Thread(SendLoop) { IsBackground = true, Name = "cappy-send" };
            sender.Start();
            reader = Task.Run(ReadLoop);
        }

        // Turns off Nagle's algorithm on the socket under the WebSocket:
        // ClientWebSocket does not say, and with it on, a small message sent
        // right after a large one (a step's stepped after its picture) waits
        // for the peer's delayed ACK, about 40 ms. Found by walking the
        // implementation's fields (Mono's and Unity's are .NET's managed
        // WebSocket over a NetworkStream); where none is found, nothing changes.
        static bool NoDelay(object o, int depth)
        {
            if (o == null || depth > 4) return false;
            var sock = o as System.Net.Sockets.Socket;
            if (sock != null)
            {
                try { sock.NoDelay = true; return true; } catch (Exception) { return false; }
            }
            var t = o.GetType();
            if (t.IsPrimitive || o is string || t.IsArray || t.IsPointer) return false;
            for (; t != null && t != typeof(object); t = t.BaseType)
                foreach (var f in t.GetFields(System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.DeclaredOnly))
                {
                    if (f.FieldType.IsPrimitive || f.FieldType.IsEnum || f.FieldType == typeof(string)) continue;
                    string ns = f.FieldType.Namespace ?? "";
                    if (!ns.StartsWith("System.Net", StringComparison.Ordinal) && !ns.StartsWith("System.IO", StringComparison.Ordinal)) continue;
                    object v;
                    try { v = f.GetValue(o); } catch (Exception) { continue; }
                    if (NoDelay(v, depth + 1)) return true;
                }
            return false;
        }

        /// <inheritdoc/>
        public bool Send(string text)
        {
            if (Volatile.Read(ref closed) != 0) return false;
            byte[] b = Encoding.UTF8.GetBytes(text);
            if (b.Length > Wire.MaxMessageBytes)
            {
                if (log != null) log.Warn("Cappy: not sending a message of " + b.Length + " bytes, over the 4 MiB limit");
                return false;
            }
            try { outbox.Add(b); } catch (InvalidOperationException) { return false; }
            return true;
        }

        /// <summary>How many messages wait to be sent.</summary>
        public int Backlog { get { return outbox.Count; } }

        void SendLoop()
        {
            try
            {
                foreach (var b in outbox.GetConsumingEnumerable(stop.Token))
                {
                    ws.SendAsync(new ArraySegment<byte>(b), WebSocketMessageType.Text, true, stop.Token).GetAwaiter().GetResult();
                }
            }
            catch (OperationCanceledException) { }
            catch (Exception e)
            {
                End("sending failed: " + e.Message);
            }
        }

        async Task ReadLoop()
        {
            var buf = new byte[64 << 10];
            var msg = new MemoryStream();
            string why = "the controller closed the connection";
            try
            {
                while (true)
                {
                    var r = await ws.ReceiveAsync(new ArraySegment<byte>(buf), stop.Token).ConfigureAwait(false);
                    if (r.MessageType == WebSocketMessageType.Close)
                    {
                        if (r.CloseStatus.HasValue) why += " (" + (int)r.CloseStatus.Value + (string.IsNullOrEmpty(r.CloseStatusDescription) ? "" : " " + r.CloseStatusDescription) + ")";
                        try { await ws.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, "", CancellationToken.None).ConfigureAwait(false); } catch (Exception) { }
                        break;
                    }
                    if (msg.Length + r.Count > Wire.MaxMessageBytes)
                    {
                        why = "the controller sent a message over 4 MiB";
                        try { await ws.CloseOutputAsync(WebSocketCloseStatus.MessageTooBig, "message over 4 MiB", CancellationToken.None).ConfigureAwait(false); } catch (Exception) { }
                        break;
                    }
                    msg.Write(buf, 0, r.Count);
                    if (!r.EndOfMessage) continue;
                    if (r.MessageType == WebSocketMessageType.Binary)
                    {
                        if (log != null) log.Warn("Cappy: ignoring a binary message from the controller");
                    }
                    else
                    {
                        string text = Encoding.UTF8.GetString(msg.GetBuffer(), 0, (int)msg.Length);
                        var h = OnMessage;
                        if (h != null)
                        {
                            try { h(text); }
                            catch (Exception e) { if (log != null) log.Error("Cappy: handling a message: " + e); }
                        }
                    }
                    msg.SetLength(0);
                }
            }
            catch (OperationCanceledException) { why = "the connection was closed"; }
            catch (Exception e) { why = "the connection to the controller was lost: " + e.Message; }
            End(why);
        }

        void End(string why)
        {
            if (Interlocked.Exchange(ref closed, 1) != 0) return;
            outbox.CompleteAdding();
            var h = OnClosed;
            if (h != null) h(why);
            try { stop.Cancel(); } catch (ObjectDisposedException) { }
            try { ws.Abort(); } catch (Exception) { }
        }

        /// <inheritdoc/>
        public void Close(string reason)
        {
            if (Volatile.Read(ref closed) != 0) return;
            // Let what is queued go first (bounded), then close.
            var deadline = DateTime.UtcNow.AddSeconds(1);
            while (outbox.Count > 0 && DateTime.UtcNow < deadline) Thread.Sleep(5);
            try
            {
                if (ws.State == WebSocketState.Open)
                    ws.CloseOutputAsync(WebSocketCloseStatus.NormalClosure, reason ?? "", CancellationToken.None).Wait(1000);
            }
            catch (Exception) { }
            End(reason ?? "closed");
            var r = reader;
            if (r != null) r.Wait(1000);
        }

        /// <inheritdoc/>
        public void Dispose()
        {
            Close("adapter stopping");
        }
    }
}
