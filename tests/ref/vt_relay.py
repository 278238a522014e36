#!/usr/bin/env python3
"""vt_relay - test tool: an on-path TCP relay that resets connections (docs/dispute.md "Connections
are not parties"). Not part of the product.

  vt_relay.py PORT_FILE TARGET_PORT_FILE MODE N LOG

Listens on 127.0.0.1 (port written atomically to PORT_FILE) and relays each connection to
127.0.0.1:<port in TARGET_PORT_FILE, read at each connection>. MODE:
  pending  reset a connection when bytes from the client have waited N ms for any byte back
           (a question pending at the server)
  chunks   reset a connection right after relaying the N-th chunk from the server
A reset is an RST on both sides (SO_LINGER 0). Each reset appends a line "cut" to LOG."""
import os
import socket
import struct
import sys
import threading
import time

port_file, target_file, mode, n, log = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
lock = threading.Lock()


def cut(socks, why):
    # SO_LINGER 0: the close sends an RST; shutdown first wakes the other direction's thread, which is
    # blocked in recv on the same socket (a close alone would leave the connection open under it)
    for s in socks:
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass
    with lock, open(log, "a") as f:
        f.write("cut " + why + "\n")


def handle(c):
    try:
        with open(target_file) as f:
            port = int(f.read().strip())
        s = socket.create_connection(("127.0.0.1", port))
    except OSError:
        c.close()
        return
    st = {"pending": None, "chunks": 0, "done": False}
    mu = threading.Lock()

    def pump(src, dst, from_client):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
                with mu:
                    if from_client:
                        if st["pending"] is None:
                            st["pending"] = time.monotonic()
                    else:
                        st["pending"] = None
                        st["chunks"] += 1
                        if mode == "chunks" and st["chunks"] >= n and not st["done"]:
                            st["done"] = True
                            cut((c, s), "after %d chunks" % st["chunks"])
                            return
        except OSError:
            pass
        with mu:
            if not st["done"]:
                st["done"] = True
                for x in (c, s):
                    try:
                        x.shutdown(socket.SHUT_RDWR)
                        x.close()
                    except OSError:
                        pass

    threading.Thread(target=pump, args=(c, s, True), daemon=True).start()
    threading.Thread(target=pump, args=(s, c, False), daemon=True).start()
    while mode == "pending":
        time.sleep(0.01)
        with mu:
            if st["done"]:
                return
            if st["pending"] is not None and time.monotonic() - st["pending"] > n / 1000.0:
                st["done"] = True
                cut((c, s), "a question pending %d ms" % n)
                return


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(64)
tmp = port_file + ".tmp"
with open(tmp, "w") as f:
    f.write("%d\n" % srv.getsockname()[1])
os.rename(tmp, port_file)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
