"""Compressed batches and record headers through librdkafka (confluent-kafka from PyPI): produce with
each compression, read back with librdkafka and with the raw client (which reads uncompressed batches
only: what attributes the stored batches come back with). Usage: compress.py PORT"""
import sys, time, uuid
from confluent_kafka import Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
import kwire
PORT = sys.argv[1]; bs = f"127.0.0.1:{PORT}"
adm = AdminClient({"bootstrap.servers": bs})
for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
    T = f"c-{codec}-" + uuid.uuid4().hex[:4]
    for k, f in adm.create_topics([NewTopic(T, 1, 1)]).items(): f.result(10)
    p = Producer({"bootstrap.servers": bs, "compression.type": codec, "linger.ms": 20})
    for i in range(5):
        p.produce(T, key=b"k%d" % i, value=(b"value-%d-" % i) * 20, partition=0, headers=[("h", b"x%d" % i)])
    p.flush(10)
    c = Consumer({"bootstrap.servers": bs, "group.id": "g", "enable.auto.commit": False})
    c.assign([TopicPartition(T, 0, 0)])
    got = []; t0 = time.time()
    while len(got) < 5 and time.time() - t0 < 5:
        m = c.poll(0.2)
        if m is None or m.error(): continue
        got.append((m.offset(), m.key(), m.value() == (b"value-%d-" % m.offset()) * 20, m.headers()))
    c.close()
    try:
        raw = kwire.Conn(port=int(PORT)).fetch(T, 0, 0)
        attrs = [b["attributes"] for b in raw["batches"]]
    except Exception as e:  # noqa: BLE001
        attrs = repr(e)
    print(f"{codec}: librdkafka read {[(o, k, ok) for (o, k, ok, h) in got]} headers {[h for (*_, h) in got][:2]}...; raw fetch batch attributes {attrs}")
