"""An OPC UA client (o6, i.e. open62541) driven line by line, for host/tests/it/opcua.rs.

Speaks the same line protocol as opcua_client.py (the asyncua driver): one
JSON command per line on stdin, one JSON answer per line on stdout;
DataChange notifications arrive as {"event": "change", ...} lines at any
time. Prints {"ready": true} when it takes commands.

Commands:
  {"op": "connect", "url": U, "security": "none" | "sign" | "sign-encrypt",
   "user": N, "password": P, "certs": DIR}       -> {"ok": true, "nonce_len": n} | {"ok": false, "error": E}
  {"op": "disconnect"}                            -> {"ok": true}
  {"op": "resolve", "path": [names under Objects, in urn:trellis:bacnet unless "N:name"]}
                                                  -> {"node": "ns=2;i=1004"} | {"error": E}
  {"op": "browse", "node": N}                     -> {"children": [browse names]}
  {"op": "read", "node": N, "attribute": A}       -> {"status": S, "value": V}
  {"op": "write", "node": N, "value": V, "variant": T}  -> {"status": S}
  {"op": "subscribe", "node": N, "interval": ms}  -> {"ok": true}

Client certificates (security other than none): DIR/o6-client-cert.der and
DIR/o6-client-key.pem, made here if missing (application URI
urn:trellis:test:o6). The server's certificate is taken from its
GetEndpoints answer and put in the client's trust list.

Node ids in commands and answers use the server's namespace indices
("ns=2;i=1004"). o6 renumbers remote namespaces into its own process-wide
registry, so every NodeId is translated at the boundary.

nonce_len is the length of open62541's session server nonce, which the
client replaces with the ActivateSession response's serverNonce.

The o6 wheel runs in a time-limited mode: the process is ended after about
10 minutes.
"""

import asyncio
import base64
import json
import os
import sys
import uuid
from pathlib import Path

# o6 prints a banner to fd 1 from native code when imported, and native code
# may log there too: keep the real stdout for the protocol and send fd 1
# (and Python's sys.stdout) to stderr.
_PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

import numpy as np  # noqa: E402
import o6  # noqa: E402
from o6.ns import ns0  # noqa: E402

APP_URI = "urn:trellis:test:o6"
BACNET_NS = "urn:trellis:bacnet"


def out(obj):
    _PROTO.write(json.dumps(obj) + "\n")
    _PROTO.flush()


def status_name(code):
    """The spec's spelling of a status code: Good, BadNotWritable, ..."""
    try:
        return o6.StatusCodeError(int(code)).symbol
    except Exception:
        return f"0x{int(code):08X}"


def error_text(e):
    if isinstance(e, o6.StatusCodeError):
        text = f"{e.symbol}: status 0x{int(e.code):08X}"
        for note in getattr(e, "__notes__", []) or []:
            text += f"; {note}"
        return text
    return f"{type(e).__name__}: {e}"


class Session:
    """One connected o6 client plus the namespace translation for it."""

    def __init__(self, client, uris):
        self.client = client
        self.uris = uris  # the server's NamespaceArray: wire index -> URI
        self.wire_to_local = {0: 0, 1: 1}
        self.local_to_wire = {0: 0, 1: 1}
        snapshot = getattr(client, "_namespace_snapshot", None) or ()
        for _uri, local, wire in snapshot:
            self.wire_to_local.setdefault(wire, local)
            self.local_to_wire[local] = wire
        self.subscription = None

    def local_ns(self, wire):
        if wire in self.wire_to_local:
            return self.wire_to_local[wire]
        if wire < len(self.uris):
            hits = [h for h in o6.ns.filter(uri=self.uris[wire]) if h.scope == self.client._name]
            if hits:
                self.wire_to_local[wire] = hits[0].index
                return hits[0].index
        raise ValueError(f"namespace index {wire} is not in the server's NamespaceArray")

    def wire_ns(self, ns):
        if isinstance(ns, int):
            return self.local_to_wire.get(ns, ns)
        if ns.index in self.local_to_wire:
            return self.local_to_wire[ns.index]
        if ns.uri in self.uris:
            return self.uris.index(ns.uri)
        return ns.index

    def node(self, text):
        """A NodeId string in the server's numbering ("ns=2;i=5", "i=85") -> o6.NodeId."""
        wire, rest = 0, text
        if text.startswith("ns="):
            head, rest = text.split(";", 1)
            wire = int(head[3:])
        kind, ident = rest.split("=", 1)
        ns = self.local_ns(wire)
        if kind == "i":
            return o6.NodeId(ns=ns, i=int(ident))
        if kind == "s":
            return o6.NodeId(ns=ns, s=ident)
        if kind == "g":
            return o6.NodeId(ns=ns, g=uuid.UUID(ident))
        if kind == "b":
            return o6.NodeId(ns=ns, b=base64.b64decode(ident))
        raise ValueError(f"bad NodeId {text!r}")

    def node_text(self, nodeid):
        """o6.NodeId (or ExpandedNodeId) -> a NodeId string in the server's numbering."""
        nodeid = o6.NodeId(nodeid)
        wire = self.wire_ns(nodeid.ns)
        ident = nodeid.id
        if isinstance(ident, int):
            body = f"i={ident}"
        elif isinstance(ident, str):
            body = f"s={ident}"
        elif isinstance(ident, uuid.UUID):
            body = f"g={ident}"
        else:
            body = f"b={base64.b64encode(ident).decode()}"
        return body if wire == 0 else f"ns={wire};{body}"

    def jsonable(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
        if isinstance(v, (int, float)):
            return v
        if isinstance(v, np.ndarray):
            return [self.jsonable(x) for x in v.tolist()]
        if isinstance(v, (list, tuple)):
            return [self.jsonable(x) for x in v]
        if isinstance(v, bytes):
            return v.hex()
        if isinstance(v, (o6.NodeId, o6.ExpandedNodeId)):
            return self.node_text(v)
        if isinstance(v, o6.QualifiedName):
            return v.name
        if isinstance(v, o6.LocalizedText):
            return v.text
        if isinstance(v, ns0.datatypes.EUInformation):
            return {"unit_id": int(v.unitId), "namespace": v.namespaceUri, "display_name": v.displayName.text}
        if isinstance(v, o6.ExtensionObject) and v.body is not None and not isinstance(v.body, bytes):
            return self.jsonable(v.body)
        return str(v)


def ensure_certificate(certs):
    """DIR/o6-client-cert.der and DIR/o6-client-key.pem, made with o6's own helper if missing."""
    certs = Path(certs)
    certs.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = certs / "o6-client-cert.der", certs / "o6-client-key.pem"
    if not (cert_path.exists() and key_path.exists()):
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        from o6.util import createSelfSignedCertificate

        key_pem, cert_pem = createSelfSignedCertificate(
            appUri=APP_URI,
            commonName="trellis-test-o6",
            organization="Trellis tests",
            expiresInDays=3650,
            keySize=2048,
            fmt="PEM",
        )
        cert_der = x509.load_pem_x509_certificate(cert_pem).public_bytes(Encoding.DER)
        key_path.write_bytes(key_pem)
        cert_path.write_bytes(cert_der)
    return cert_path.read_bytes(), key_path.read_bytes()


_SPARE = None


def spare_certificate():
    """A client certificate kept in memory, for a password on the None channel without "certs"."""
    global _SPARE
    if _SPARE is None:
        from o6.util import createSelfSignedCertificate

        key_pem, cert_pem = createSelfSignedCertificate(
            appUri=APP_URI, commonName="trellis-test-o6", organization="Trellis tests", fmt="PEM"
        )
        _SPARE = (cert_pem, key_pem)
    return _SPARE


async def endpoints_of(url):
    """The server's endpoints, from GetEndpoints on a channel without a session."""
    probe = o6.Client(url)
    await probe.connect(noSession=True)
    try:
        return list(await probe.getEndpoints(url))
    finally:
        await probe.disconnect()


def endpoint(endpoints, policy, mode):
    for ep in endpoints:
        if ep.securityPolicyUri == policy.value and int(ep.securityMode) == int(mode):
            return ep
    raise RuntimeError(f"the server has no {policy.name} endpoint with security mode {mode.name}")


async def connect(cmd):
    url = cmd["url"]
    security = cmd.get("security", "none")
    kwargs = {"applicationUri": APP_URI}
    none_password = False
    if security != "none":
        mode = o6.SecurityMode.SIGN if security == "sign" else o6.SecurityMode.SIGN_AND_ENCRYPT
        ep = endpoint(await endpoints_of(url), o6.SecurityPolicy.BASIC256SHA256, mode)
        cert, key = ensure_certificate(cmd["certs"])
        kwargs.update(
            certificate=cert,
            privateKey=key,
            trustList=[bytes(ep.serverCertificate)],  # trust the server we were pointed at
            securityMode=int(mode),
            securityPolicy=o6.SecurityPolicy.BASIC256SHA256.value,
        )
    else:
        kwargs.update(securityMode=int(o6.SecurityMode.NONE), securityPolicy=o6.SecurityPolicy.NONE.value)
        if cmd.get("user"):
            ep = endpoint(await endpoints_of(url), o6.SecurityPolicy.NONE, o6.SecurityMode.NONE)
            policies = [
                t.securityPolicyUri
                for t in ep.userIdentityTokens
                if int(t.tokenType) == int(ns0.datatypes.UserTokenType.USER_NAME)
            ]
            if any(p and p != o6.SecurityPolicy.NONE.value for p in policies):
                # The password is to be encrypted (e.g. with Basic256Sha256)
                # even on the None channel; open62541 only has that policy when
                # it has a certificate of its own (without one it reports "No
                # suitable endpoint found").
                cert, key = ensure_certificate(cmd["certs"]) if cmd.get("certs") else spare_certificate()
                kwargs.update(certificate=cert, privateKey=key, trustList=[bytes(ep.serverCertificate)])
            else:
                # The server takes the password in clear on this endpoint, as
                # asyncua would send it.
                none_password = True
    client = o6.Client(url, **kwargs)
    client.config.timeout = 10_000
    client.config.allowNonePolicyPassword = none_password
    client.config.sessionName = "trellis-test-o6"
    if cmd.get("user"):
        client.config.setUsernamePassword(cmd["user"], cmd.get("password", ""))
    try:
        await client.connect(createDefaultSubscription=False)
    except Exception as e:
        # A refused connect may surface as a generic failure; the connect
        # status then carries the server's code.
        try:
            code = client.state[2]
        except Exception:
            code = 0
        text = error_text(e)
        if code and status_name(code) not in text:
            text = f"{status_name(code)}: {text}"
        try:
            await client.disconnect()
        except Exception:
            pass
        raise ConnectError(text) from None
    uris = [str(u) for u in await client.read(o6.NodeId("i=2255"))]
    session = Session(client, uris)
    try:
        _token, nonce = client._get_session_auth_token()
        nonce_len = len(nonce) if nonce is not None else None
    except Exception:
        nonce_len = None
    return session, nonce_len


class ConnectError(Exception):
    pass


def variant_value(kind, value):
    if kind == "Null":
        # hasValue set with an empty Variant, as asyncua's ua.Variant() sends.
        return o6.decodeBinary(bytes([0x01, 0x00]), o6.DataValue)
    if kind == "String":
        return o6.DataValue(value=str(value))
    if kind == "Boolean":
        return o6.DataValue(value=o6.Boolean(bool(value)))
    return o6.DataValue(value=getattr(o6, kind)(value))


async def main():
    session = None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out({"ready": True})
    while True:
        line = await reader.readline()
        if not line:
            break
        if not line.strip():
            continue
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "connect":
                if session is not None:
                    try:
                        await session.client.disconnect()
                    except Exception:
                        pass
                    session = None
                try:
                    session, nonce_len = await connect(cmd)
                    answer = {"ok": True}
                    if nonce_len is not None:
                        answer["nonce_len"] = nonce_len
                    out(answer)
                except ConnectError as e:
                    out({"ok": False, "error": str(e)})
                except Exception as e:  # the refusal is the answer
                    out({"ok": False, "error": error_text(e)})
            elif op == "disconnect":
                if session is not None:
                    await session.client.disconnect()
                session = None
                out({"ok": True})
            elif session is None:
                out({"error": "not connected"})
            elif op == "resolve":
                elements = []
                for name in cmd["path"]:
                    if name[:1].isdigit() and ":" in name:
                        idx, bare = name.split(":", 1)
                        wire = int(idx)
                    else:
                        wire, bare = session.uris.index(BACNET_NS), name
                    elements.append(
                        ns0.datatypes.RelativePathElement(
                            referenceTypeId=o6.NodeId(ns0.reftypes.HierarchicalReferences),
                            includeSubtypes=True,
                            isInverse=False,
                            targetName=o6.QualifiedName(session.local_ns(wire), bare),
                        )
                    )
                relative = ns0.datatypes.RelativePath()
                relative.elements = elements
                path = ns0.datatypes.BrowsePath(startingNode=o6.NodeId("i=85"), relativePath=relative)
                result = await session.client.translateBrowsePathsToNodeIds(path)
                if result.statusCode != o6.StatusCode.GOOD or not result.targets:
                    code = result.statusCode if result.statusCode != o6.StatusCode.GOOD else o6.StatusCode.BAD_NO_MATCH
                    out({"error": f"{status_name(code)}: TranslateBrowsePathsToNodeIds {cmd['path']}"})
                else:
                    out({"node": session.node_text(result.targets[0].targetId)})
            elif op == "browse":
                refs = await session.client.browse(
                    session.node(cmd["node"]), resultMask=ns0.datatypes.BrowseResultMask.BROWSE_NAME
                )
                out({"children": sorted(r.browseName.name for r in refs)})
            elif op == "read":
                dv = await session.client.read(
                    session.node(cmd["node"]), attr=cmd.get("attribute", "Value"), valueOnly=False
                )
                out({"status": status_name(dv.status or 0), "value": session.jsonable(dv.value)})
            elif op == "write":
                payload = variant_value(cmd.get("variant", "Float"), cmd.get("value"))
                try:
                    status = await session.client.write(session.node(cmd["node"]), payload)
                    out({"status": status_name(status)})
                except o6.StatusCodeError as e:
                    out({"status": e.symbol})
            elif op == "subscribe":
                interval = float(cmd.get("interval", 100))
                if session.subscription is None:
                    session.subscription = await session.client.createSubscription(publishingInterval=interval)
                node = session.node(cmd["node"])
                text = session.node_text(node)
                current = session

                def changed(value, text=text, current=current):
                    out({"event": "change", "node": text, "value": current.jsonable(value)})

                await session.client.monitor(
                    node, changed, samplingInterval=interval, subscription=session.subscription
                )
                out({"ok": True})
            else:
                out({"error": f"unknown op {op}"})
        except Exception as e:
            out({"error": error_text(e)})
    if session is not None:
        try:
            await session.client.disconnect()
        except Exception:
            pass


asyncio.run(main())
