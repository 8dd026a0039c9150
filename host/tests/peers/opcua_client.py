"""An OPC UA client (asyncua) driven line by line, for host/tests/it/opcua.rs.

Reads one JSON command per line on stdin and answers one JSON line on
stdout; DataChange notifications arrive as {"event": "change", ...} lines at
any time. Prints READY when it takes commands.

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

Client certificates (security other than none): DIR/client-cert.der and
DIR/client-key.pem, made here if missing (application URI
urn:trellis:test:asyncua).
"""

import asyncio
import json
import sys
from pathlib import Path

from asyncua import Client, ua
from asyncua.crypto.cert_gen import setup_self_signed_certificate
from asyncua.crypto.security_policies import SecurityPolicyBasic256Sha256
from cryptography.x509.oid import ExtendedKeyUsageOID

APP_URI = "urn:trellis:test:asyncua"


def jsonable(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, ua.EUInformation):
        return {"unit_id": v.UnitId, "namespace": v.NamespaceUri, "display_name": v.DisplayName.Text}
    if isinstance(v, ua.LocalizedText):
        return v.Text
    if isinstance(v, ua.QualifiedName):
        return v.Name
    if isinstance(v, ua.NodeId):
        return v.to_string()
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return str(v)


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Changes:
    def datachange_notification(self, node, val, data):
        out({"event": "change", "node": node.nodeid.to_string(), "value": jsonable(val)})


async def connect(cmd):
    client = Client(cmd["url"], timeout=10)
    client.application_uri = APP_URI
    security = cmd.get("security", "none")
    if security != "none":
        certs = Path(cmd["certs"])
        certs.mkdir(parents=True, exist_ok=True)
        cert, key = certs / "client-cert.der", certs / "client-key.pem"
        await setup_self_signed_certificate(
            key, cert, APP_URI, "localhost", [ExtendedKeyUsageOID.CLIENT_AUTH], {"commonName": "trellis-test-asyncua"}
        )
        mode = ua.MessageSecurityMode.Sign if security == "sign" else ua.MessageSecurityMode.SignAndEncrypt
        await client.set_security(SecurityPolicyBasic256Sha256, str(cert), str(key), mode=mode)
    if cmd.get("user"):
        client.set_user(cmd["user"])
        client.set_password(cmd["password"])
    await client.connect()
    return client


async def main():
    client = None
    subscription = None
    ns = None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out({"ready": True})
    while True:
        line = await reader.readline()
        if not line:
            break
        cmd = json.loads(line)
        op = cmd["op"]
        try:
            if op == "connect":
                try:
                    client = await connect(cmd)
                    ns = None
                    nonce = client._server_nonce or b""
                    out({"ok": True, "nonce_len": len(nonce)})
                except Exception as e:  # the refusal is the answer
                    client = None
                    out({"ok": False, "error": f"{type(e).__name__}: {e}"})
            elif op == "disconnect":
                if client is not None:
                    await client.disconnect()
                client, subscription = None, None
                out({"ok": True})
            elif op == "resolve":
                if ns is None:
                    ns = await client.get_namespace_index("urn:trellis:bacnet")
                # A name with an index ("0:EngineeringUnits") is taken as it is.
                names = [name if name[:1].isdigit() and ":" in name else f"{ns}:{name}" for name in cmd["path"]]
                node = await client.nodes.objects.get_child(names)
                out({"node": node.nodeid.to_string()})
            elif op == "browse":
                children = await client.get_node(cmd["node"]).get_children()
                out({"children": sorted([(await c.read_browse_name()).Name for c in children])})
            elif op == "read":
                attribute = getattr(ua.AttributeIds, cmd.get("attribute", "Value"))
                dv = await client.get_node(cmd["node"]).read_attribute(attribute, raise_on_bad_status=False)
                out({"status": dv.StatusCode.name, "value": jsonable(dv.Value.Value if dv.Value else None)})
            elif op == "write":
                kind = cmd.get("variant", "Float")
                if kind == "Null":
                    variant = ua.Variant()
                else:
                    variant = ua.Variant(cmd["value"], getattr(ua.VariantType, kind))
                try:
                    await client.get_node(cmd["node"]).write_value(ua.DataValue(variant))
                    out({"status": "Good"})
                except ua.UaStatusCodeError as e:
                    out({"status": type(e).__name__})
            elif op == "subscribe":
                if subscription is None:
                    subscription = await client.create_subscription(cmd.get("interval", 100), Changes())
                await subscription.subscribe_data_change(client.get_node(cmd["node"]))
                out({"ok": True})
            else:
                out({"error": f"unknown op {op}"})
        except Exception as e:
            out({"error": f"{type(e).__name__}: {e}"})
    if client is not None:
        await client.disconnect()


asyncio.run(main())
