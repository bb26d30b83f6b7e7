"""A librdkafka consumer (confluent-kafka from PyPI) assigned at offsets inside and after a 10-record
batch. Usage: rdk.py PORT"""
import sys, time, uuid
from confluent_kafka import Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
port = sys.argv[1]
bs = f"127.0.0.1:{port}"
T = "rdk-" + uuid.uuid4().hex[:6]
a = AdminClient({"bootstrap.servers": bs})
for k, f in a.create_topics([NewTopic(T, 2, 1)]).items():
    f.result(10)
p = Producer({"bootstrap.servers": bs, "linger.ms": 50, "enable.idempotence": False})
for i in range(10):
    p.produce(T, value=f"v{i}".encode(), partition=0)
p.flush(10)
for i in range(10, 13):
    p.produce(T, value=f"v{i}".encode(), partition=0); p.flush(10)
def consume_from(off, iso):
    c = Consumer({"bootstrap.servers": bs, "group.id": "g" + uuid.uuid4().hex[:6], "enable.auto.commit": False,
                  "isolation.level": iso, "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(T, 0, off)])
    got = []
    t0 = time.time()
    while time.time() - t0 < 4:
        m = c.poll(0.2)
        if m is None: continue
        if m.error(): got.append(("ERR", str(m.error()))); continue
        got.append(m.offset())
    lo, hi = c.get_watermark_offsets(TopicPartition(T, 0), timeout=5)
    c.close()
    return got, (lo, hi)
for off, iso in ((0, "read_committed"), (4, "read_committed"), (4, "read_uncommitted"), (11, "read_committed")):
    print(f"assign at {off} {iso}:", consume_from(off, iso))
