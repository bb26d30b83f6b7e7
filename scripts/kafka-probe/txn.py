"""Idempotent and transactional producing with librdkafka, then what a raw Fetch/ListOffsets sees. Needs confluent-kafka from PyPI.
Usage: txn.py PORT"""
import sys, time, uuid
import kwire
from confluent_kafka import Producer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
PORT = int(sys.argv[1]); bs = f"127.0.0.1:{PORT}"
T = "txn-" + uuid.uuid4().hex[:6]
adm = AdminClient({"bootstrap.servers": bs})
for k, f in adm.create_topics([NewTopic(T, 1, 1)]).items():
    f.result(10)
c = kwire.Conn(port=PORT)
p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 0})
for i in range(3):
    p.produce(T, value=b"idem%d" % i, partition=0)
print("idempotent producer flush, left:", p.flush(10))
f = c.fetch(T, 0, 0)
print("after idempotent: hw", f["high_watermark"], "batches", [(b["base_offset"], b["producer_id"], b["producer_epoch"]) for b in f["batches"]])
tp = Producer({"bootstrap.servers": bs, "transactional.id": "tx-" + uuid.uuid4().hex[:6], "linger.ms": 0})
try:
    tp.init_transactions(10)
    print("init_transactions: ok")
    tp.begin_transaction()
    for i in range(2):
        tp.produce(T, value=b"tx%d" % i, partition=0)
    print("txn flush, left:", tp.flush(10))
    for iso in (0, 1):
        f = c.fetch(T, 0, 0, isolation=iso)
        print(f"open txn: fetch iso{iso}: hw {f['high_watermark']} lso {f['last_stable_offset']} aborted {f['aborted']} "
              f"offsets {[o for b in f['batches'] for (o, _, _) in b['records']]} "
              f"transactional {[(b['base_offset'], b['transactional'], b['control']) for b in f['batches']]}")
        print(f"open txn: list_offsets -1 iso{iso}:", c.list_offsets(T, 0, -1, isolation=iso))
    try:
        tp.abort_transaction(10)
        print("abort_transaction: ok")
    except KafkaException as e:
        print("abort_transaction:", e)
    f = c.fetch(T, 0, 0, isolation=1)
    print(f"after abort attempt: fetch iso1: hw {f['high_watermark']} lso {f['last_stable_offset']} aborted {f['aborted']} "
          f"offsets {[o for b in f['batches'] for (o, _, _) in b['records']]} control {[b['control'] for b in f['batches']]}")
except KafkaException as e:
    print("transactions:", e)
