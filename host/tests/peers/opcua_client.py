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
  {"op": "read_many", "node": N, "count": n}      -> one Read of n ReadValueIds (N's Value each):
                                                     {"status": "Good", "results": n, "good": g} | {"status": S}
  {"op": "write_many", "node": N, "count": n, "value": V, "variant": T}
                                                  -> one Write of n WriteValues: as read_many
  {"op": "type", "node": N}                       -> its TypeDefinition: {"type": BrowseName, "namespace": URI,
                                                     "id": numeric id, "supertypes": [BrowseNames up to BaseObjectType]}
  {"op": "limits"}                                -> the server's advertised capabilities and the
                                                     connection's negotiated limits: {"MaxNodesPerRead": …, …}

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


async def many(client, cmd):
    """One Read or Write service call of cmd["count"] operations on one node."""
    node = ua.NodeId.from_string(cmd["node"])
    try:
        if cmd["op"] == "read_many":
            params = ua.ReadParameters()
            for _ in range(cmd["count"]):
                rv = ua.ReadValueId()
                rv.NodeId = node
                rv.AttributeId = ua.AttributeIds.Value
                params.NodesToRead.append(rv)
            results = [dv.StatusCode for dv in await client.uaclient.read(params)]
        else:
            params = ua.WriteParameters()
            variant = ua.Variant(cmd["value"], getattr(ua.VariantType, cmd.get("variant", "Float")))
            for _ in range(cmd["count"]):
                wv = ua.WriteValue()
                wv.NodeId = node
                wv.AttributeId = ua.AttributeIds.Value
                wv.Value = ua.DataValue(variant)
                params.NodesToWrite.append(wv)
            results = await client.uaclient.write(params)
    except ua.UaStatusCodeError as e:
        return {"status": type(e).__name__}
    except Exception as e:  # a closed connection, a local refusal: named
        return {"status": f"{type(e).__name__}: {e}"}
    return {"status": "Good", "results": len(results), "good": sum(1 for s in results if s.is_good())}


async def type_of(client, node):
    """A node's TypeDefinition, its namespace's URI and the chain of its supertypes."""
    namespaces = await client.get_namespace_array()
    tid = await client.get_node(node).read_type_definition()
    answer = {
        "type": (await client.get_node(tid).read_browse_name()).Name,
        "namespace": namespaces[tid.NamespaceIndex],
        "id": tid.Identifier,
        "supertypes": [],
    }
    current = client.get_node(tid)
    for _ in range(10):
        refs = await current.get_references(refs=ua.ObjectIds.HasSubtype, direction=ua.BrowseDirection.Inverse)
        if not refs:
            break
        current = client.get_node(refs[0].NodeId)
        answer["supertypes"].append((await current.read_browse_name()).Name)
    return answer


# ServerCapabilities (i=2268) and its OperationLimits (i=11704), by their standard NodeIds.
CAPABILITIES = {
    "MaxArrayLength": 11702,
    "MaxStringLength": 11703,
    "MaxByteStringLength": 12911,
    "MaxNodesPerRead": 11705,
    "MaxNodesPerWrite": 11707,
    "MaxNodesPerBrowse": 11710,
    "MaxMonitoredItemsPerCall": 11714,
    "MaxNodesPerRegisterNodes": 11711,
    "MaxNodesPerTranslateBrowsePathsToNodeIds": 11712,
    "MaxNodesPerMethodCall": 11709,
}


async def limits(client):
    answer = {}
    for name, i in CAPABILITIES.items():
        dv = await client.get_node(ua.NodeId(i, 0)).read_attribute(ua.AttributeIds.Value, raise_on_bad_status=False)
        answer[name] = dv.Value.Value if dv.StatusCode.is_good() else dv.StatusCode.name
    # What the server's Acknowledge said (asyncua keeps it as the connection's limits).
    limits = client.uaclient.protocol._connection._limits
    answer["ack"] = {
        "max_message_size": limits.max_message_size,
        "max_chunk_count": limits.max_chunk_count,
        "receive_buffer_size": limits.max_recv_buffer,
        "send_buffer_size": limits.max_send_buffer,
    }
    return answer


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
            elif op in ("read_many", "write_many"):
                out(await many(client, cmd))
            elif op == "limits":
                out(await limits(client))
            elif op == "type":
                out(await type_of(client, cmd["node"]))
            else:
                out({"error": f"unknown op {op}"})
        except Exception as e:
            out({"error": f"{type(e).__name__}: {e}"})
    if client is not None:
        await client.disconnect()


asyncio.run(main())
