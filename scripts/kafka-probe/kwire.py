"""A minimal Kafka wire-protocol client (stdlib only), for probing a broker's behaviour.

Only non-flexible request versions are used (no tagged fields), so that every request and
response is plain big-endian fields.
"""
import socket
import struct
import time

# ---------------------------------------------------------------- encoding


def i8(v):
    return struct.pack(">b", v)


def i16(v):
    return struct.pack(">h", v)


def i32(v):
    return struct.pack(">i", v)


def i64(v):
    return struct.pack(">q", v)


def string(s):
    if s is None:
        return i16(-1)
    b = s.encode()
    return i16(len(b)) + b


def array(items, enc):
    if items is None:
        return i32(-1)
    return i32(len(items)) + b"".join(enc(x) for x in items)


def nbytes(b):
    if b is None:
        return i32(-1)
    return i32(len(b)) + b


def varint(v):
    v = (v << 1) ^ (v >> 63)  # zigzag
    out = b""
    while True:
        byte = v & 0x7F
        v >>= 7
        if v:
            out += bytes([byte | 0x80])
        else:
            out += bytes([byte])
            return out


# CRC-32C (Castagnoli), for record batches.
_CRC_TABLE = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    _CRC_TABLE.append(c)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def record_batch(values, producer_id=-1, producer_epoch=-1, base_sequence=-1,
                 transactional=False, control=False):
    now = int(time.time() * 1000)
    recs = b""
    for i, (k, v) in enumerate(values):
        body = i8(0) + varint(0) + varint(i)
        body += varint(-1) if k is None else varint(len(k)) + k
        body += varint(-1) if v is None else varint(len(v)) + v
        body += varint(0)
        recs += varint(len(body)) + body
    attributes = (0x10 if transactional else 0) | (0x20 if control else 0)
    after_crc = (i16(attributes) + i32(len(values) - 1) + i64(now) + i64(now)
                 + i64(producer_id) + i16(producer_epoch) + i32(base_sequence)
                 + i32(len(values)) + recs)
    after_len = i32(0) + i8(2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return i64(0) + i32(len(after_len)) + after_len


# ---------------------------------------------------------------- decoding


class R:
    def __init__(self, b):
        self.b = b
        self.p = 0

    def take(self, n):
        v = self.b[self.p:self.p + n]
        self.p += n
        return v

    def i8(self):
        return struct.unpack(">b", self.take(1))[0]

    def i16(self):
        return struct.unpack(">h", self.take(2))[0]

    def i32(self):
        return struct.unpack(">i", self.take(4))[0]

    def u32(self):
        return struct.unpack(">I", self.take(4))[0]

    def i64(self):
        return struct.unpack(">q", self.take(8))[0]

    def string(self):
        n = self.i16()
        return None if n < 0 else self.take(n).decode()

    def nbytes(self):
        n = self.i32()
        return None if n < 0 else self.take(n)

    def array(self, dec):
        n = self.i32()
        return None if n < 0 else [dec(self) for _ in range(n)]

    def varint(self):
        shift = 0
        v = 0
        while True:
            byte = self.take(1)[0]
            v |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        return (v >> 1) ^ -(v & 1)

    def left(self):
        return len(self.b) - self.p


def decode_batches(data):
    """Record batches (magic 2) of a fetch response: a list of dicts, each with its records."""
    out = []
    r = R(data or b"")
    while r.left() >= 12:
        base_offset = r.i64()
        length = r.i32()
        if r.left() < length:
            break  # a partial batch at the end of the response
        br = R(r.take(length))
        br.i32()  # partition leader epoch
        magic = br.i8()
        br.u32()
        attributes = br.i16()
        last_delta = br.i32()
        br.i64()
        br.i64()
        pid = br.i64()
        epoch = br.i16()
        br.i32()
        count = br.i32()
        records = []
        if attributes & 0x07:
            count = 0  # compressed records: not decoded here
        for _ in range(count):
            br.varint()
            br.i8()
            br.varint()
            delta = br.varint()
            kl = br.varint()
            k = br.take(kl) if kl >= 0 else None
            vl = br.varint()
            v = br.take(vl) if vl >= 0 else None
            hn = br.varint()
            for _ in range(hn):
                hk = br.varint()
                br.take(hk)
                hv = br.varint()
                if hv > 0:
                    br.take(hv)
            records.append((base_offset + delta, k, v))
        out.append(dict(base_offset=base_offset, magic=magic, attributes=attributes,
                        compression=attributes & 0x07,
                        transactional=bool(attributes & 0x10), control=bool(attributes & 0x20),
                        last_offset=base_offset + last_delta, producer_id=pid,
                        producer_epoch=epoch, records=records))
    return out


# ---------------------------------------------------------------- connection


class Conn:
    def __init__(self, host="127.0.0.1", port=9092, timeout=30):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.cid = 0

    def close(self):
        self.s.close()

    def _recv(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return buf

    def call(self, key, version, body):
        self.cid += 1
        header = i16(key) + i16(version) + i32(self.cid) + string("kwire")
        msg = header + body
        self.s.sendall(i32(len(msg)) + msg)
        n = struct.unpack(">i", self._recv(4))[0]
        resp = R(self._recv(n))
        assert resp.i32() == self.cid
        return resp

    # ApiVersions v0
    def api_versions(self):
        r = self.call(18, 0, b"")
        err = r.i16()
        keys = r.array(lambda r: (r.i16(), r.i16(), r.i16()))
        return err, {k: (lo, hi) for k, lo, hi in keys}

    # Metadata v1 (topics None: all)
    def metadata(self, topics=None):
        r = self.call(3, 1, array(topics, string))
        brokers = r.array(lambda r: (r.i32(), r.string(), r.i32(), r.string()))
        controller = r.i32()

        def part(r):
            return dict(error=r.i16(), partition=r.i32(), leader=r.i32(),
                        replicas=r.array(lambda r: r.i32()), isr=r.array(lambda r: r.i32()))

        topics = r.array(lambda r: dict(error=r.i16(), name=r.string(), internal=r.i8(),
                                        partitions=r.array(part)))
        return dict(brokers=brokers, controller=controller, topics=topics)

    # CreateTopics v0
    def create_topic(self, name, partitions, rf=1, timeout_ms=5000):
        body = array([name], lambda n: string(n) + i32(partitions) + i16(rf)
                     + array([], None) + array([], None)) + i32(timeout_ms)
        r = self.call(19, 0, body)
        return r.array(lambda r: (r.string(), r.i16()))

    # DeleteTopics v1
    def delete_topic(self, name, timeout_ms=5000):
        r = self.call(20, 1, array([name], string) + i32(timeout_ms))
        r.i32()
        return r.array(lambda r: (r.string(), r.i16()))

    # Produce v3
    def produce(self, topic, partition, batch, acks=-1, transactional_id=None):
        body = (string(transactional_id) + i16(acks) + i32(5000)
                + array([topic], lambda t: string(t) + array(
                    [partition], lambda p: i32(p) + nbytes(batch))))
        r = self.call(0, 3, body)
        res = r.array(lambda r: (r.string(), r.array(
            lambda r: dict(partition=r.i32(), error=r.i16(), base_offset=r.i64(),
                           log_append_time=r.i64()))))
        return res[0][1][0]

    # Fetch v4
    def fetch(self, topic, partition, offset, max_wait_ms=0, min_bytes=1,
              max_bytes=1 << 20, isolation=0):
        body = (i32(-1) + i32(max_wait_ms) + i32(min_bytes) + i32(max_bytes) + i8(isolation)
                + array([topic], lambda t: string(t) + array(
                    [partition], lambda p: i32(p) + i64(offset) + i32(max_bytes))))
        r = self.call(1, 4, body)
        r.i32()

        def part(r):
            d = dict(partition=r.i32(), error=r.i16(), high_watermark=r.i64(),
                     last_stable_offset=r.i64(),
                     aborted=r.array(lambda r: (r.i64(), r.i64())))
            d["records"] = r.nbytes()
            return d

        res = r.array(lambda r: (r.string(), r.array(part)))
        if not res or not res[0][1]:
            return dict(empty_response=True)
        p = res[0][1][0]
        p["batches"] = decode_batches(p.pop("records"))
        return p

    # ListOffsets v2
    def list_offsets(self, topic, partition, timestamp, isolation=0):
        body = (i32(-1) + i8(isolation) + array([topic], lambda t: string(t) + array(
            [partition], lambda p: i32(p) + i64(timestamp))))
        r = self.call(2, 2, body)
        r.i32()
        res = r.array(lambda r: (r.string(), r.array(
            lambda r: dict(partition=r.i32(), error=r.i16(), timestamp=r.i64(),
                           offset=r.i64()))))
        return res[0][1][0]

    # InitProducerId v0
    def init_producer_id(self, transactional_id=None, timeout_ms=60000):
        r = self.call(22, 0, string(transactional_id) + i32(timeout_ms))
        return dict(throttle=r.i32(), error=r.i16(), producer_id=r.i64(), producer_epoch=r.i16())

    # AddPartitionsToTxn v0
    def add_partitions_to_txn(self, transactional_id, pid, epoch, topic, partition):
        body = (string(transactional_id) + i64(pid) + i16(epoch)
                + array([topic], lambda t: string(t) + array([partition], i32)))
        r = self.call(24, 0, body)
        r.i32()
        return r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))

    # EndTxn v0
    def end_txn(self, transactional_id, pid, epoch, commit):
        r = self.call(26, 0, string(transactional_id) + i64(pid) + i16(epoch) + i8(1 if commit else 0))
        return dict(throttle=r.i32(), error=r.i16())


API_NAMES = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 8: "OffsetCommit",
             9: "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat",
             13: "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups",
             17: "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics",
             21: "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch",
             24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn",
             28: "TxnOffsetCommit", 29: "DescribeAcls", 32: "DescribeConfigs",
             33: "AlterConfigs", 36: "SaslAuthenticate", 37: "CreatePartitions",
             42: "DeleteGroups", 44: "IncrementalAlterConfigs", 47: "OffsetDelete",
             50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials",
             60: "DescribeCluster", 61: "DescribeProducers", 68: "ConsumerGroupHeartbeat",
             69: "ConsumerGroupDescribe", 71: "GetTelemetrySubscriptions", 72: "PushTelemetry",
             75: "DescribeTopicPartitions"}
