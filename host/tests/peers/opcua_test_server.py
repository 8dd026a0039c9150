"""A small OPC UA server standing in for a PLC, on asyncua or on o6 (open62541).

Usage: opcua_test_server.py --stack asyncua|o6 --port P [--user NAME:PASSWORD]

Listens on 127.0.0.1:P only, SecurityPolicy None, anonymous sessions (and the
user, if given, with a plain password on the None channel). Namespace
urn:trellis:test:plc; under Objects an object PLC with the client-writable
variables Temperature (Double 20.5), Running (Boolean false), Mode
(UInt32 1) and Count (Int32 0).

First stdout line:
  {"ready": true, "url": "opc.tcp://127.0.0.1:P/", "nodes": {"Temperature": "ns=2;s=Temperature", ...}}
(node ids with the server's real namespace index). Then one JSON command per
stdin line, one answer per stdout line:
  {"op": "set", "name": N, "value": V}  -> {"ok": true}   (subscribed clients see a DataChange)
  {"op": "get", "name": N}              -> {"value": V}
A client's write prints {"event": "written", "name": N, "value": V} at any time.
Exits on stdin EOF or SIGTERM.

On o6 the variables are callback-backed (read and write callbacks), so a
client write is seen in the write callback and DataChanges come from the
server sampling the read callback. On asyncua a client write is seen in a
PostWrite server callback; set uses write_attribute_value. The o6 wheel ends
its process after about 10 minutes.
"""

import argparse
import asyncio
import json
import os
import signal
import sys
import threading

# o6 prints a banner to fd 1 from native code; keep the real stdout for the
# protocol and send fd 1 (and sys.stdout) to stderr.
_PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

NAMESPACE = "urn:trellis:test:plc"
VARIABLES = {  # name: (OPC UA type, initial value)
    "Temperature": ("Double", 20.5),
    "Running": ("Boolean", False),
    "Mode": ("UInt32", 1),
    "Count": ("Int32", 0),
}


def out(obj):
    _PROTO.write(json.dumps(obj) + "\n")
    _PROTO.flush()


def plain(kind, value):
    """A JSON value of the variable's type."""
    if value is None:
        return None
    if kind == "Double":
        return float(value)
    if kind == "Boolean":
        return bool(value)
    return int(value)


class AsyncuaPlc:
    def __init__(self, port, user):
        self.port, self.user = port, user
        self.vars = {}

    async def start(self):
        from asyncua import Server, ua
        from asyncua.common.callback import CallbackType
        from asyncua.crypto.permission_rules import User, UserRole
        from asyncua.server.user_managers import UserManager

        self.ua = ua
        credentials = self.user

        class Users(UserManager):
            def get_user(self, iserver, username=None, password=None, certificate=None):
                if username is None:
                    return User(role=UserRole.User)  # anonymous: may read and write
                if credentials and username == credentials[0] and password == credentials[1]:
                    return User(role=UserRole.User, name=username)
                return None

        server = Server(user_manager=Users())
        await server.init()
        server.set_endpoint(f"opc.tcp://127.0.0.1:{self.port}/")
        server.set_server_name("Trellis test PLC (asyncua)")
        await server.set_application_uri("urn:trellis:test:plc:asyncua")
        server.set_security_policy([ua.SecurityPolicyType.NoSecurity])
        tokens = [ua.AnonymousIdentityToken]
        if self.user:
            tokens.append(ua.UserNameIdentityToken)
        server.set_identity_tokens(tokens)
        idx = await server.register_namespace(NAMESPACE)
        plc = await server.nodes.objects.add_object(ua.NodeId("PLC", idx), ua.QualifiedName("PLC", idx))
        for name, (kind, initial) in VARIABLES.items():
            var = await plc.add_variable(
                ua.NodeId(name, idx), ua.QualifiedName(name, idx), initial, varianttype=getattr(ua.VariantType, kind)
            )
            await var.set_writable()
            self.vars[name] = var
        self.names = {var.nodeid: name for name, var in self.vars.items()}
        server.subscribe_server_callback(CallbackType.PostWrite, self._written)
        await server.start()
        self.server = server
        return {name: var.nodeid.to_string() for name, var in self.vars.items()}

    def _written(self, event, _dispatcher):
        if not event.is_external:
            return
        results = event.response_params or []
        for item, status in zip(event.request_params.NodesToWrite, results):
            name = self.names.get(item.NodeId)
            if name is None or item.AttributeId != self.ua.AttributeIds.Value or not status.is_good():
                continue
            value = item.Value.Value.Value if item.Value and item.Value.Value else None
            out({"event": "written", "name": name, "value": plain(VARIABLES[name][0], value)})

    async def set(self, name, value):
        ua = self.ua
        kind = VARIABLES[name][0]
        variant = ua.Variant(plain(kind, value), getattr(ua.VariantType, kind))
        await self.server.write_attribute_value(self.vars[name].nodeid, ua.DataValue(variant))

    async def get(self, name):
        return plain(VARIABLES[name][0], await self.vars[name].read_value())

    async def stop(self):
        await self.server.stop()


class O6Plc:
    def __init__(self, port, user):
        self.port, self.user = port, user
        self.values = {}

    async def start(self):
        import functools

        import o6
        from o6.server import AccessControl, Server
        from o6.ns import ns0

        self.o6 = o6
        loop = asyncio.get_running_loop()
        # o6 has no listen-address setting and opens its listener through this
        # loop's create_server on every interface: keep it on loopback.
        create_server = loop.create_server

        async def loopback_only(factory, host=None, port=None, **kw):
            return await create_server(factory, "127.0.0.1", port, **kw)

        loop.create_server = loopback_only

        credentials = self.user

        class Access(AccessControl):
            def activateSession(self, endpoint, remoteCertificate, session, userIdentityToken):
                if isinstance(userIdentityToken, ns0.datatypes.AnonymousIdentityToken):
                    return None
                if (
                    credentials
                    and isinstance(userIdentityToken, ns0.datatypes.UserNameIdentityToken)
                    and userIdentityToken.userName == credentials[0]
                    and bytes(userIdentityToken.password) == credentials[1].encode()
                ):
                    return credentials[0]
                raise o6.StatusCodeError(o6.StatusCode.BAD_USER_ACCESS_DENIED)

        server = Server(
            port=self.port,
            loop=loop,
            applicationUri="urn:trellis:test:plc:o6",
            accessControl=Access(anonymous=True, username=bool(self.user)),
            allowNonePolicyPassword=bool(self.user),
        )
        module = o6.ns.register("trellis_test_plc", NAMESPACE)
        await asyncio.sleep(0)
        added = server._on_event_loop(functools.partial(server._add_namespace, NAMESPACE, module.index))
        if asyncio.isfuture(added) or asyncio.iscoroutine(added):
            await added
        wire = server._get_namespace_index(NAMESPACE)

        async def settle(handle):
            return await handle if asyncio.isfuture(handle) or asyncio.iscoroutine(handle) else handle

        plc = await settle(
            server.addObject("PLC", server.objects, nodeId=o6.NodeId(ns=module.index, s="PLC"), ns=module.index)
        )
        nodes = {}
        for name, (kind, initial) in VARIABLES.items():
            typed = getattr(o6, kind)(initial)
            self.values[name] = typed
            var = await settle(
                server.addVariable(name, plc, typed, nodeId=o6.NodeId(ns=module.index, s=name), ns=module.index)
            )
            server.implement(var, read=self._reader(name), write=self._writer(name))
            nodes[name] = f"ns={wire};s={name}"
        server.start()
        await server.waitReady()
        self.server = server
        return nodes

    def _reader(self, name):
        def read(node, *, range=None, session=None, includeSourceTimestamp=False):
            return (self.o6.StatusCode.GOOD, self.values[name])

        return read

    def _writer(self, name):
        kind = VARIABLES[name][0]

        def write(node, value, *, range=None, session=None):
            if value.value is None:
                return (self.o6.StatusCode.BAD_TYPE_MISMATCH,)
            self.values[name] = getattr(self.o6, kind)(value.value)
            if session is not None:
                out({"event": "written", "name": name, "value": plain(kind, value.value)})
            return (self.o6.StatusCode.GOOD,)

        return write

    async def set(self, name, value):
        kind = VARIABLES[name][0]
        self.values[name] = getattr(self.o6, kind)(plain(kind, value))

    async def get(self, name):
        return plain(VARIABLES[name][0], self.values[name])

    async def stop(self):
        result = self.server.stop()
        if result is not None:
            await result


def stdin_lines(loop, queue):
    """Feed stdin lines into an asyncio queue from a daemon thread (None at EOF)."""

    def run():
        for line in sys.stdin:
            loop.call_soon_threadsafe(queue.put_nowait, line)
        loop.call_soon_threadsafe(queue.put_nowait, None)

    threading.Thread(target=run, daemon=True).start()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stack", choices=["asyncua", "o6"], required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", help="NAME:PASSWORD")
    args = parser.parse_args()
    user = tuple(args.user.split(":", 1)) if args.user else None

    loop = asyncio.get_running_loop()
    plc = (AsyncuaPlc if args.stack == "asyncua" else O6Plc)(args.port, user)
    nodes = await plc.start()
    out({"ready": True, "url": f"opc.tcp://127.0.0.1:{args.port}/", "nodes": nodes})

    queue = asyncio.Queue()
    loop.add_signal_handler(signal.SIGTERM, queue.put_nowait, None)
    loop.add_signal_handler(signal.SIGINT, queue.put_nowait, None)
    stdin_lines(loop, queue)
    while True:
        line = await queue.get()
        if line is None:
            break
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
            op, name = cmd.get("op"), cmd.get("name")
            if name not in VARIABLES:
                out({"error": f"unknown variable {name!r}"})
            elif op == "set":
                await plc.set(name, cmd["value"])
                out({"ok": True})
            elif op == "get":
                out({"value": await plc.get(name)})
            else:
                out({"error": f"unknown op {op!r}"})
        except Exception as e:
            out({"error": f"{type(e).__name__}: {e}"})
    await plc.stop()


asyncio.run(main())
