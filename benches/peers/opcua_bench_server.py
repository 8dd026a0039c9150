"""An OPC UA server for the Read benchmark, on asyncua or on o6 (open62541).

Usage: opcua_bench_server.py --stack asyncua|o6 --port P [--count 100]

Listens on 127.0.0.1:P only, SecurityPolicy None, anonymous sessions.
Namespace urn:trellis:bench; under Objects an object Bench (ns=N;i=1000) with
COUNT read-only Int32 variables V1..VCOUNT, NodeIds ns=N;i=1001..1000+COUNT,
initial values 1..COUNT. Nothing changes the values after start.

The variables are plain value-holding variables in both stacks: on o6 they
have no read callback (no `implement`) and the access control is the
unmodified base class, so open62541 answers a Read itself without calling
into Python. (o6's network I/O still runs on this process's asyncio loop.)

First and only stdout line:
  {"ready": true, "url": "opc.tcp://127.0.0.1:P/", "nodes": ["ns=2;i=1001", ...]}
with the namespace index a client on the network must use. Then serves until
stdin reaches EOF or SIGTERM/SIGINT, and exits 0. The o6 wheel ends its
process after about 10 minutes.
"""

import argparse
import asyncio
import functools
import json
import os
import signal
import sys
import threading

# o6 prints a banner to fd 1 from native code; keep the real stdout for the
# ready line and send fd 1 (and sys.stdout) to stderr.
_PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

NAMESPACE = "urn:trellis:bench"
OBJECT_ID = 1000  # Bench object; variables are OBJECT_ID + 1 .. OBJECT_ID + count


def out(obj):
    _PROTO.write(json.dumps(obj) + "\n")
    _PROTO.flush()


class AsyncuaBench:
    def __init__(self, port, count):
        self.port, self.count = port, count

    async def start(self):
        from asyncua import Server, ua

        server = Server()
        await server.init()
        server.set_endpoint(f"opc.tcp://127.0.0.1:{self.port}/")
        server.set_server_name("Trellis bench (asyncua)")
        await server.set_application_uri("urn:trellis:bench:asyncua")
        server.set_security_policy([ua.SecurityPolicyType.NoSecurity])
        server.set_identity_tokens([ua.AnonymousIdentityToken])
        idx = await server.register_namespace(NAMESPACE)
        bench = await server.nodes.objects.add_object(
            ua.NodeId(OBJECT_ID, idx), ua.QualifiedName("Bench", idx)
        )
        nodes = []
        for n in range(1, self.count + 1):
            var = await bench.add_variable(
                ua.NodeId(OBJECT_ID + n, idx),
                ua.QualifiedName(f"V{n}", idx),
                n,
                varianttype=ua.VariantType.Int32,
            )
            nodes.append(var.nodeid.to_string())
        await server.start()
        self.server = server
        return nodes

    async def stop(self):
        await self.server.stop()


class O6Bench:
    def __init__(self, port, count):
        self.port, self.count = port, count

    async def start(self):
        import o6
        from o6.server import AccessControl, Server

        loop = asyncio.get_running_loop()
        # o6 has no listen-address setting and opens its listener through this
        # loop's create_server on every interface: keep it on loopback.
        create_server = loop.create_server

        async def loopback_only(factory, host=None, port=None, **kw):
            return await create_server(factory, "127.0.0.1", port, **kw)

        loop.create_server = loopback_only

        server = Server(
            port=self.port,
            loop=loop,
            applicationUri="urn:trellis:bench:o6",
            # The unmodified base class: anonymous only, no Python hooks.
            accessControl=AccessControl(anonymous=True, username=False),
        )
        # o6 keeps its own (process-wide) namespace numbering; the index on the
        # wire is the server's NamespaceArray position, looked up below.
        module = o6.ns.register("trellis_bench", NAMESPACE)
        await asyncio.sleep(0)
        added = server._on_event_loop(functools.partial(server._add_namespace, NAMESPACE, module.index))
        if asyncio.isfuture(added) or asyncio.iscoroutine(added):
            await added
        wire = server._get_namespace_index(NAMESPACE)

        async def settle(handle):
            return await handle if asyncio.isfuture(handle) or asyncio.iscoroutine(handle) else handle

        bench = await settle(
            server.addObject(
                "Bench", server.objects, nodeId=o6.NodeId(ns=module.index, i=OBJECT_ID), ns=module.index
            )
        )
        nodes = []
        for n in range(1, self.count + 1):
            await settle(
                server.addVariable(
                    f"V{n}",
                    bench,
                    o6.Int32(n),
                    nodeId=o6.NodeId(ns=module.index, i=OBJECT_ID + n),
                    writable=False,
                    ns=module.index,
                )
            )
            nodes.append(f"ns={wire};i={OBJECT_ID + n}")
        server.start()
        await server.waitReady()
        self.server = server
        return nodes

    async def stop(self):
        result = self.server.stop()
        if result is not None:
            await result


def watch_stdin(loop, done):
    """Set `done` from a daemon thread when stdin reaches EOF."""

    def run():
        try:
            while sys.stdin.buffer.read1(65536):
                pass
        except (OSError, ValueError):
            pass
        loop.call_soon_threadsafe(done.set)

    threading.Thread(target=run, daemon=True).start()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stack", choices=["asyncua", "o6"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    if args.count < 1:
        parser.error("--count must be at least 1")

    loop = asyncio.get_running_loop()
    bench = (AsyncuaBench if args.stack == "asyncua" else O6Bench)(args.port, args.count)
    nodes = await bench.start()

    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, done.set)
    loop.add_signal_handler(signal.SIGINT, done.set)
    out({"ready": True, "url": f"opc.tcp://127.0.0.1:{args.port}/", "nodes": nodes})
    watch_stdin(loop, done)
    await done.wait()
    try:
        await asyncio.wait_for(bench.stop(), 5)
    except Exception as e:  # shutting down anyway
        print(f"stop: {type(e).__name__}: {e}", file=sys.stderr)


asyncio.run(main())
sys.stderr.flush()
os._exit(0)
