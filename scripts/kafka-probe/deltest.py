"""DeleteTopics of one topic of three: which topics remain. Stdlib only. Usage: deltest.py PORT"""
import sys, kwire, uuid
c=kwire.Conn(port=int(sys.argv[1])); s=uuid.uuid4().hex[:4]
A,B,C='A'+s,'B'+s,'C'+s
def names(): return sorted(t['name'] for t in c.metadata()['topics'] if t['name'].endswith(s))
c.create_topic(A,1); c.create_topic(B,1); c.create_topic(C,1); print("created", names())
c.delete_topic(B); print("after delete B", names())
c.create_topic(B,1); print("after recreate B", names())
c.delete_topic(C); print("after delete C", names())
