# The sequence of Redis's test "BRPOPLPUSH with multiple blocked clients" over raw sockets, N
# times: usage: python3 brpoplpush-race.py PORT N (against a running `spillway serve`).
# A "(timeout)" for the first client is the race: its BRPOPLPUSH blocked after the second's.
import socket, sys, time
port = int(sys.argv[1]); n = int(sys.argv[2])
def conn():
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(2); return s
def cmd(*a):
    out = b"*%d\r\n" % len(a)
    for x in a:
        x = x.encode(); out += b"$%d\r\n%s\r\n" % (len(x), x)
    return out
def read(s):
    try: return s.recv(4096)
    except socket.timeout: return b"(timeout)"
ok = 0; bad = []
r = conn()
for i in range(n):
    r.sendall(cmd("del", "blist{t}", "target1{t}", "target2{t}")); read(r)
    r.sendall(cmd("set", "target1{t}", "nolist")); read(r)
    rd1, rd2 = conn(), conn()
    rd1.sendall(cmd("brpoplpush", "blist{t}", "target1{t}", "0"))
    rd2.sendall(cmd("brpoplpush", "blist{t}", "target2{t}", "0"))
    r.sendall(cmd("lpush", "blist{t}", "foo")); read(r)
    a, b = read(rd1), read(rd2)
    if a.startswith(b"-WRONGTYPE") and b"foo" in b: ok += 1
    else: bad.append((a, b))
    rd1.close(); rd2.close()
print("ok", ok, "of", n, "bad:", bad[:3])
