"""Each unknown-topic request on a fresh connection; after it, is the broker still serving? Stdlib only.
Usage: unknown.py PORT STEP (the steps: the keys of `steps` below)"""
import sys, uuid, kwire
PORT = int(sys.argv[1])
T = "known-" + uuid.uuid4().hex[:6]
c = kwire.Conn(port=PORT); c.create_topic(T, 3); c.close()
U = "unknown-" + uuid.uuid4().hex[:6]
steps = {
    "metadata": lambda c: [(t["name"], t["error"]) for t in c.metadata([U])["topics"]],
    "fetch-unknown-topic": lambda c: {k: v for k, v in c.fetch(U, 0, 0).items() if k != "batches"},
    "list_offsets-unknown-topic": lambda c: c.list_offsets(U, 0, -1),
    "produce-unknown-topic": lambda c: c.produce(U, 0, kwire.record_batch([(None, b"x")])),
    "fetch-partition-7-of-3": lambda c: {k: v for k, v in c.fetch(T, 7, 0).items() if k != "batches"},
    "list_offsets-partition-7-of-3": lambda c: c.list_offsets(T, 7, -1),
    "produce-partition-7-of-3": lambda c: c.produce(T, 7, kwire.record_batch([(None, b"x")])),
}
step = sys.argv[2]
try:
    c = kwire.Conn(port=PORT)
    print(step, "->", steps[step](c))
except Exception as e:
    print(step, "->", repr(e))
try:
    c = kwire.Conn(port=PORT)
    c.metadata([T]); print("  broker still serves")
except Exception as e:
    print("  broker no longer serves:", repr(e))
