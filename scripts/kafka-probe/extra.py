"""ListOffsets(latest) against the high watermark after batches of 1 and 4 records, Fetch timing with
records present, single-record produce and fetch timing. Stdlib only. Usage: extra.py PORT"""
import sys, time, uuid, kwire
PORT=int(sys.argv[1]); c=kwire.Conn(port=PORT); T="x-"+uuid.uuid4().hex[:6]
print(c.create_topic(T,1))
for n in (1,4): print("produce",n,c.produce(T,0,kwire.record_batch([(None,b"v")]*n)))
print("hw", c.fetch(T,0,0)["high_watermark"], "latest", c.list_offsets(T,0,-1)["offset"], "earliest", c.list_offsets(T,0,-2)["offset"])
for w in (0, 500, 2000):
    t0=time.monotonic(); f=c.fetch(T,0,0,max_wait_ms=w,min_bytes=1)
    print(f"fetch with data present, max_wait {w}: {round((time.monotonic()-t0)*1000)} ms, {len(f['batches'])} batches")
t0=time.monotonic(); f=c.fetch(T,0,5,max_wait_ms=500,min_bytes=1)
print(f"fetch at hw, max_wait 500: {round((time.monotonic()-t0)*1000)} ms")
# many single-record produces: time
t0=time.monotonic()
for i in range(200): c.produce(T,0,kwire.record_batch([(None,b"v%d"%i)]))
print("200 single-record produces acks=-1:", round((time.monotonic()-t0)*1000), "ms")
t0=time.monotonic(); f=c.fetch(T,0,0); print("fetch all:", round((time.monotonic()-t0)*1000), "ms", len([1 for b in f['batches'] for r in b['records']]), "records, hw", f["high_watermark"])
