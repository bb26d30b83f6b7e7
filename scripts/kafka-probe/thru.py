"""librdkafka produce and consume of N records on one partition. Needs confluent-kafka from PyPI.
Usage: thru.py PORT N"""
import sys, time, uuid
from confluent_kafka import Producer, Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
PORT, N = sys.argv[1], int(sys.argv[2]); bs = f"127.0.0.1:{PORT}"
T = "thru-" + uuid.uuid4().hex[:6]
adm = AdminClient({"bootstrap.servers": bs})
for k, f in adm.create_topics([NewTopic(T, 1, 1)]).items(): f.result(10)
p = Producer({"bootstrap.servers": bs, "linger.ms": 5, "enable.idempotence": False})
t0 = time.time()
for i in range(N):
    while True:
        try: p.produce(T, value=b"x" * 100, partition=0); break
        except BufferError: p.poll(0.01)
p.flush(60)
print(f"produce {N} x 100 B: {time.time()-t0:.2f} s")
c = Consumer({"bootstrap.servers": bs, "group.id": "g", "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": 100})
c.assign([TopicPartition(T, 0, 0)])
t0 = time.time(); n = 0; last = -1; dup = 0
while n < N and time.time() - t0 < 60:
    for m in c.consume(1000, 0.5):
        if m.error(): continue
        if m.offset() <= last: dup += 1; continue
        last = m.offset(); n += 1
print(f"consume {n} records: {time.time()-t0:.2f} s, duplicates skipped {dup}, last offset {last}")
c.close()
