"""A Sparkplug B 3.0 host application (paho-mqtt + the Sparkplug project's
protobuf as packaged by pysparkplug) that watches one group and commands
one edge node: an independent decoder for the gateway's Sparkplug messages.

Prints one JSON line per message it decodes:
  {"type": "NBIRTH", "device": null, "seq": 0, "timestamp": …,
   "metrics": [{"name": …, "alias": …, "datatype": …, "value": …, "is_null": …, "properties": {…}}]}
and `READY` once subscribed. Reads commands, one JSON line each, on stdin:
  {"cmd": "rebirth"}                                   NCMD Node Control/Rebirth = true
  {"cmd": "dcmd", "device": "1001", "alias": N | "name": S, "datatype": 9, "value": 22.5 | null}
It publishes its STATE (online, retained) as a 3.0 host application does.
Exits on stdin's end or SIGTERM.
"""

import argparse
import json
import sys
import threading
import time

import paho.mqtt.client as mqtt
from pysparkplug._protobuf import sparkplug_b_pb2 as pb

VALUE_FIELDS = ("int_value", "long_value", "float_value", "double_value", "boolean_value", "string_value")


def decode(payload):
    p = pb.Payload.FromString(payload)
    metrics = []
    for m in p.metrics:
        which = m.WhichOneof("value")
        props = {}
        if m.HasField("properties"):
            for k, v in zip(m.properties.keys, m.properties.values):
                props[k] = getattr(v, v.WhichOneof("value")) if v.WhichOneof("value") else None
        metrics.append({
            "name": m.name if m.HasField("name") else None,
            "alias": m.alias if m.HasField("alias") else None,
            "datatype": m.datatype if m.HasField("datatype") else None,
            "value": getattr(m, which) if which in VALUE_FIELDS else None,
            "is_null": m.is_null if m.HasField("is_null") else False,
            "properties": props,
        })
    return {
        "seq": p.seq if p.HasField("seq") else None,
        "timestamp": p.timestamp if p.HasField("timestamp") else None,
        "metrics": metrics,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--host-id", default="trellis-test-host")
    args = ap.parse_args()
    out = threading.Lock()

    def say(obj):
        with out:
            print(json.dumps(obj), flush=True)

    subscribed = threading.Event()
    client = mqtt.Client(client_id=args.host_id, clean_session=True)
    state_topic = f"spBv1.0/STATE/{args.host_id}"
    client.will_set(state_topic, json.dumps({"online": False, "timestamp": int(time.time() * 1000)}), qos=1, retain=True)

    def on_connect(c, _u, _f, rc):
        c.subscribe(f"spBv1.0/{args.group}/#", qos=1)

    def on_subscribe(c, _u, _mid, _q):
        c.publish(state_topic, json.dumps({"online": True, "timestamp": int(time.time() * 1000)}), qos=1, retain=True)
        subscribed.set()

    def on_message(_c, _u, msg):
        parts = msg.topic.split("/")
        kind = parts[2] if len(parts) > 2 else "?"
        if kind in ("NCMD", "DCMD"):
            return
        try:
            decoded = decode(msg.payload)
        except Exception as e:  # a message the decoder refuses is a finding
            say({"type": kind, "topic": msg.topic, "error": str(e)})
            return
        decoded.update({"type": kind, "topic": msg.topic, "node": parts[3] if len(parts) > 3 else None,
                        "device": parts[4] if len(parts) > 4 else None})
        say(decoded)

    client.on_connect = on_connect
    client.on_subscribe = on_subscribe
    client.on_message = on_message
    client.connect("127.0.0.1", args.port, keepalive=30)
    client.loop_start()
    if not subscribed.wait(20):
        say({"type": "FAILED", "error": "not subscribed within 20 s"})
        sys.exit(1)
    print("READY", flush=True)

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        cmd = json.loads(line)
        p = pb.Payload()
        p.timestamp = int(time.time() * 1000)
        m = p.metrics.add()
        if cmd["cmd"] == "rebirth":
            m.name = "Node Control/Rebirth"
            m.datatype = 11
            m.boolean_value = True
            topic = f"spBv1.0/{args.group}/NCMD/{args.node}"
        else:
            if "alias" in cmd:
                m.alias = cmd["alias"]
            else:
                m.name = cmd["name"]
            m.datatype = cmd["datatype"]
            v = cmd["value"]
            if v is None:
                m.is_null = True
            elif cmd["datatype"] == 11:
                m.boolean_value = bool(v)
            elif cmd["datatype"] == 9:
                m.float_value = float(v)
            elif cmd["datatype"] == 10:
                m.double_value = float(v)
            elif cmd["datatype"] in (7, 3):
                m.int_value = int(v)
            else:
                m.string_value = str(v)
            topic = f"spBv1.0/{args.group}/DCMD/{args.node}/{cmd['device']}"
        client.publish(topic, p.SerializeToString(), qos=0).wait_for_publish()
        say({"type": "SENT", "topic": topic})
    client.loop_stop()
    client.disconnect()


if __name__ == "__main__":
    main()
