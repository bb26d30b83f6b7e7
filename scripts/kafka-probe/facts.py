"""Probes a Kafka broker for the facts docs/kafka-broker.md records. Stdlib only.
Usage: facts.py PORT [skip-unknown] (skip-unknown: no requests for unknown topics, which stop tansu's
SQLite engine; unknown.py tries them one broker start each)"""
import sys
import threading
import time
import uuid

import kwire

PORT = int(sys.argv[1])
c = kwire.Conn(port=PORT)
T = "probe-" + uuid.uuid4().hex[:8]


def show(what, v):
    print(f"{what}: {v}")


def offsets(f):
    return [o for b in f.get("batches", []) for (o, _, _) in b["records"]]


show("create 3 partitions", c.create_topic(T, 3))
md = c.metadata([T])
show("metadata partitions", sorted(p["partition"] for p in md["topics"][0]["partitions"]))
show("metadata brokers", md["brokers"])
show("create again", c.create_topic(T, 3))
show("create 0 partitions", c.create_topic(T + "-zero", 0))
show("create -1 partitions (broker default)", c.create_topic(T + "-default", -1))
md = c.metadata([T + "-default"])
show("  its partitions", [(t["error"], len(t["partitions"] or [])) for t in md["topics"]])

U = "unknown-" + uuid.uuid4().hex[:8]
SKIP_UNKNOWN = len(sys.argv) > 2 and sys.argv[2] == "skip-unknown"
# unknown topics
if SKIP_UNKNOWN:
    print("(unknown-topic requests skipped)")
else:
  U = "unknown-" + uuid.uuid4().hex[:8]
  md = c.metadata([U])
  show("metadata unknown topic", [(t["name"], t["error"], len(t["partitions"] or [])) for t in md["topics"]])
  md = c.metadata([U])
  show("metadata unknown topic again (auto-created?)", [(t["name"], t["error"], len(t["partitions"] or [])) for t in md["topics"]])
  f = c.fetch(U + "x", 0, 0)
  show("fetch unknown topic", {k: v for k, v in f.items() if k != "batches"})
  show("list_offsets unknown topic", c.list_offsets(U + "x", 0, -1))
  show("produce unknown topic", c.produce(U + "y", 0, kwire.record_batch([(None, b"x")])))
  md = c.metadata([U + "y"])
  show("  metadata after produce to unknown topic", [(t["name"], t["error"], len(t["partitions"] or [])) for t in md["topics"]])
  f = c.fetch(T, 7, 0)
  show("fetch partition 7 of a 3-partition topic", {k: v for k, v in f.items() if k != "batches"})
  show("list_offsets partition 7", c.list_offsets(T, 7, -1))
  show("produce partition 7", c.produce(T, 7, kwire.record_batch([(None, b"x")])))

# empty partition
show("empty: list_offsets -2", c.list_offsets(T, 0, -2))
show("empty: list_offsets -1 iso0", c.list_offsets(T, 0, -1))
show("empty: list_offsets -1 iso1", c.list_offsets(T, 0, -1, isolation=1))
f = c.fetch(T, 0, 0)
show("empty: fetch 0", {k: v for k, v in f.items()})

# produce batches of 1, 3 and 2 records
for n in (1, 3, 2):
    r = c.produce(T, 0, kwire.record_batch([(b"k", f"v{i}".encode()) for i in range(n)]))
    show(f"produce {n} records", r)
for iso in (0, 1):
    f = c.fetch(T, 0, 0, isolation=iso)
    show(f"fetch from 0 iso{iso}", dict(hw=f["high_watermark"], lso=f["last_stable_offset"],
                                       err=f["error"], aborted=f["aborted"], offsets=offsets(f),
                                       batches=[(b["base_offset"], b["last_offset"]) for b in f["batches"]]))
f = c.fetch(T, 0, 2)
show("fetch from 2 (inside the second batch)", dict(offsets=offsets(f), batches=[(b["base_offset"], b["last_offset"]) for b in f["batches"]]))
f = c.fetch(T, 0, 0, max_bytes=10)
show("fetch from 0 max_bytes=10", dict(err=f["error"], offsets=offsets(f), batches=len(f["batches"])))
for ts in (-2, -1):
    for iso in (0, 1):
        show(f"list_offsets {ts} iso{iso}", c.list_offsets(T, 0, ts, isolation=iso))
show("list_offsets by timestamp 0", c.list_offsets(T, 0, 0))
show("list_offsets by timestamp far future", c.list_offsets(T, 0, int(time.time() * 1000) + 10**9))

hw = c.fetch(T, 0, 0)["high_watermark"]
for off in (hw, hw + 1, hw + 100, -5):
    t0 = time.monotonic()
    f = c.fetch(T, 0, off, max_wait_ms=0)
    show(f"fetch at {off} (hw {hw}) max_wait 0", dict(err=f["error"], hw=f["high_watermark"], offsets=offsets(f),
                                                  ms=round((time.monotonic() - t0) * 1000)))

# long poll: nothing arrives
t0 = time.monotonic()
f = c.fetch(T, 0, hw, max_wait_ms=3000, min_bytes=1)
show("fetch at hw, max_wait 3000, min_bytes 1, nothing produced", dict(err=f["error"], offsets=offsets(f), ms=round((time.monotonic() - t0) * 1000)))


# long poll: a record arrives after 1 s on another connection
def later():
    time.sleep(1.0)
    p = kwire.Conn(port=PORT)
    p.produce(T, 0, kwire.record_batch([(None, b"late")]))
    p.close()


th = threading.Thread(target=later)
th.start()
t0 = time.monotonic()
f = c.fetch(T, 0, hw, max_wait_ms=5000, min_bytes=1)
show("fetch at hw, max_wait 5000, a record produced after 1000 ms", dict(err=f["error"], offsets=offsets(f), ms=round((time.monotonic() - t0) * 1000)))
th.join()
f = c.fetch(T, 0, hw, max_wait_ms=0)
show("  then fetch at old hw", dict(offsets=offsets(f)))

# other partitions untouched
show("partition 1 list_offsets -1", c.list_offsets(T, 1, -1))

# idempotent producer
ip = c.init_producer_id(None)
show("init_producer_id(null)", ip)
if ip["error"] == 0:
    r = c.produce(T, 1, kwire.record_batch([(None, b"a"), (None, b"b")], ip["producer_id"], ip["producer_epoch"], 0))
    show("  idempotent produce seq 0", r)
    r = c.produce(T, 1, kwire.record_batch([(None, b"a"), (None, b"b")], ip["producer_id"], ip["producer_epoch"], 0))
    show("  same batch again (duplicate)", r)
    r = c.produce(T, 1, kwire.record_batch([(None, b"c")], ip["producer_id"], ip["producer_epoch"], 5))
    show("  seq 5 (gap)", r)
    show("  partition 1 list_offsets -1", c.list_offsets(T, 1, -1))

# transactions
tc = kwire.Conn(port=PORT)
tx = "tx-" + uuid.uuid4().hex[:6]
ip = tc.init_producer_id(tx)
show("init_producer_id(transactional)", ip)
if ip["error"] == 0:
    pid, ep = ip["producer_id"], ip["producer_epoch"]
    show("  add_partitions_to_txn", tc.add_partitions_to_txn(tx, pid, ep, T, 2))
    show("  plain produce p2", tc.produce(T, 2, kwire.record_batch([(None, b"plain0")])))
    r = tc.produce(T, 2, kwire.record_batch([(None, b"t0"), (None, b"t1")], pid, ep, 0, transactional=True), transactional_id=tx)
    show("  transactional produce p2", r)
    show("  plain produce p2 after the open txn", tc.produce(T, 2, kwire.record_batch([(None, b"plain1")])))
    for iso in (0, 1):
        f = tc.fetch(T, 2, 0, isolation=iso)
        show(f"  open txn: fetch iso{iso}", dict(hw=f["high_watermark"], lso=f["last_stable_offset"],
                                                aborted=f["aborted"], offsets=offsets(f),
                                                batches=[(b["base_offset"], b["transactional"], b["control"]) for b in f["batches"]]))
        show(f"  open txn: list_offsets -1 iso{iso}", tc.list_offsets(T, 2, -1, isolation=iso))
    try:
        show("  end_txn(abort) (not advertised)", tc.end_txn(tx, pid, ep, False))
    except Exception as e:  # noqa
        show("  end_txn(abort) (not advertised)", repr(e))

show("delete topic", c.delete_topic(T))
md = c.metadata([T])
show("metadata after delete", [(t["name"], t["error"], len(t["partitions"] or [])) for t in md["topics"]])
show("delete unknown topic", c.delete_topic(U + "z"))
