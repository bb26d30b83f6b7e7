"""ApiVersions, an 8-partition topic, Fetch max_wait timing (records present; a record arriving during the
wait), delete and recreate. Stdlib only. Usage: more.py PORT"""
import sys, time, uuid, threading, random, kwire
PORT=int(sys.argv[1]); c=kwire.Conn(port=PORT)
err,v=c.api_versions(); print("api_versions err",err, {kwire.API_NAMES.get(k,k):v[k] for k in (0,1,2,3,19,20,22,24,25,26,28,37) if k in v}, "EndTxn advertised:", 26 in v, "CreatePartitions advertised:", 37 in v)
T="m-"+uuid.uuid4().hex[:6]; print(c.create_topic(T,8)); print("partitions", len(c.metadata([T])["topics"][0]["partitions"]))
c.produce(T,0,kwire.record_batch([(None,b"a")]*3))
for w in (0,100,500,2000):
    t0=time.monotonic(); f=c.fetch(T,0,0,max_wait_ms=w); print(f"data present, max_wait {w}: {round((time.monotonic()-t0)*1000)} ms")
# latency: record produced at a random time into a waiting fetch
for w in (100, 500):
    lat=[]
    for i in range(8):
        hw=c.fetch(T,0,0)["high_watermark"]
        d=random.uniform(0, w/1000*0.9)
        def later():
            time.sleep(d); p=kwire.Conn(port=PORT); p.produce(T,0,kwire.record_batch([(None,b"x")])); p.close(); later.t=time.monotonic()
        th=threading.Thread(target=later); th.start()
        f=c.fetch(T,0,hw,max_wait_ms=w); t1=time.monotonic(); th.join()
        got=[o for b in f["batches"] for (o,_,_) in b["records"]]
        lat.append((round((t1-later.t)*1000) if got else None))
    print(f"max_wait {w}: produce->fetch return ms {lat}")
print("delete", c.delete_topic(T)); print("recreate", c.create_topic(T,2)); f=c.fetch(T,0,0)
print("after recreate: partitions", len(c.metadata([T])["topics"][0]["partitions"]), "hw p0", f["high_watermark"], "records", sum(len(b["records"]) for b in f["batches"]))
