"""SIGKILL a `kafka.sh serve` broker (SQLite file) and start it again: what survives, how fast. Stdlib only.
Usage: restart.py PORT DBPATH (a file that does not exist yet)"""
import os, signal, socket, subprocess, sys, time, uuid
import kwire
PORT = int(sys.argv[1]); DB = sys.argv[2]
SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "services", "kafka.sh")

def start():
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", SCRIPT, "serve", str(PORT), DB], stdout=subprocess.DEVNULL, stderr=open(DB + ".log", "a"))
    while True:
        try:
            c = kwire.Conn(port=PORT, timeout=5)
            c.metadata()
            return p, c, time.monotonic() - t0
        except OSError:
            time.sleep(0.01)

p, c, took = start()
print(f"first start: answered a Metadata request after {took*1000:.0f} ms (pid {p.pid}: the broker itself, exec'd: {open(f'/proc/{p.pid}/cmdline').read().split(chr(0))[0]})")
T = "restart-" + uuid.uuid4().hex[:6]
print("create 4 partitions:", c.create_topic(T, 4))
t0 = time.monotonic()
for i in range(100):
    c.produce(T, i % 4, kwire.record_batch([(None, b"v%d" % i)]))
print(f"100 single-record produces (acks=-1): {(time.monotonic()-t0)*1000:.0f} ms")
for part in range(4):
    c.produce(T, part, kwire.record_batch([(None, b"b%d" % j) for j in range(5)]))
before = {part: [o for b in c.fetch(T, part, 0)["batches"] for (o, _, _) in b["records"]] for part in range(4)}
print("before kill, offsets per partition:", {k: (v[0], v[-1], len(v)) for k, v in before.items()})
p.send_signal(signal.SIGKILL); p.wait()
print("SIGKILLed; exit", p.returncode)
for round in range(3):
    p, c, took = start()
    md = c.metadata([T])
    after = {part: [o for b in c.fetch(T, part, 0)["batches"] for (o, _, _) in b["records"]] for part in range(4)}
    print(f"restart {round+1}: answered after {took*1000:.0f} ms; topic partitions {len(md['topics'][0]['partitions'])}, "
          f"error {md['topics'][0]['error']}; records equal: {after == before}; hw p0 {c.fetch(T, 0, 0)['high_watermark']}, "
          f"latest p0 {c.list_offsets(T, 0, -1)['offset']}")
    r = c.produce(T, 0, kwire.record_batch([(None, b"after")]))
    print("   produce after restart: base_offset", r["base_offset"])
    before[0].append(r["base_offset"])
    p.send_signal(signal.SIGKILL); p.wait()
