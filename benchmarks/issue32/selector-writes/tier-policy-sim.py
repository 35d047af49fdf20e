import math
def run(policy, N, L, cycles=1):
    # tiers: list of (size, multi) oldest first; start after split: R of N/2
    writes=0; newc=0; maxt=0; tsum=0; steps=0
    tiers=[(N//2, True)]
    total=N//2
    while total < N:
        tiers.append((L, False)); writes+=L; newc+=L; total+=L
        policy(tiers, lambda w: None)
        # count merges writes
        maxt=max(maxt,len(tiers)); tsum+=len(tiers); steps+=1
    return tiers, maxt, tsum/steps
def mk_level(ratio, maxt, pin_multi=False):
    W=[0]
    def pol(tiers, _):
        while True:
            total=sum(s for s,_ in tiers)
            pinned=lambda t: (not t[1] or pin_multi) and t[0]*4>=total
            free=[i for i,t in enumerate(tiers) if not pinned(t)]
            if len(free)<2: return
            o,n=free[-2],free[-1]
            small = tiers[n][0]*ratio < tiers[o][0]
            if small and len(free)<=maxt: return
            W[0]+=tiers[o][0]+tiers[n][0]
            tiers[o]=(tiers[o][0]+tiers[n][0], True); del tiers[n]
    return pol,W
def mk_sized(k, L, maxt=20):
    W=[0]
    def pol(tiers,_):
        while True:
            cls=[int(math.log(max(s,1)/L, k)+1e-9) for s,_ in tiers]
            # newest k tiers of same class
            done=True
            for c in set(cls):
                idx=[i for i,x in enumerate(cls) if x==c and i>0]
                if len(idx)>=k:
                    grp=idx[-k:]
                    s=sum(tiers[i][0] for i in grp); W[0]+=s
                    for i in reversed(grp[1:]): del tiers[i]
                    tiers[grp[0]]=(s,True); done=False; break
            if done: return
    return pol,W
N=3_700_000
for L in (60_000, 16_000, 4_700):
    print("L",L, "new entries per cycle", N//2)
    for name,(pol,W) in [("ratio4 max3",mk_level(4,3)),("ratio2 max3",mk_level(2,3)),("ratio4 max3 pinR",mk_level(4,3,True)),("ratio8",mk_level(8,3)),
                         ("sized k4",mk_sized(4,L)),("sized k3",mk_sized(3,L)),("sized k8",mk_sized(8,L)),("ratio4 max6",mk_level(4,6)),("ratio2 max6 pin",mk_level(2,6,True))]:
        tiers,maxt,avg=run(pol,N,L)
        print(f"  {name:18s} merge writes per new entry {W[0]/(N//2):5.2f}  max tiers {maxt:2d} avg {avg:4.1f}  end {[round(s/1e6,2) for s,_ in tiers]}")
print("---- absolute classes, cap")
def mk_abs(k, cap):
    W=[0]
    def pol(tiers,_):
        while True:
            total=sum(s for s,_ in tiers)
            pinned=lambda t: (not t[1]) and t[0]*4>=total
            free=[i for i,t in enumerate(tiers) if not pinned(t)]
            by={}
            for i in free: by.setdefault(int(math.log(tiers[i][0],k)),[]).append(i)
            grp=None
            for c in sorted(by):
                if len(by[c])>=k: grp=by[c]; break
            if grp is None and len(free)>cap:
                grp=sorted(free,key=lambda i:tiers[i][0])[:2]; grp.sort()
            if grp is None: return
            s=sum(tiers[i][0] for i in grp); W[0]+=s
            for i in reversed(grp[1:]): del tiers[i]
            tiers[grp[0]]=(s,True)
    return pol,W
for L in (60_000, 16_000, 4_700):
    for k,cap in ((4,8),(4,10),(4,12),(3,8),(5,10)):
        pol,W=mk_abs(k,cap); tiers,maxt,avg=run(pol,N,L)
        print(f"L {L:6d} k{k} cap{cap:2d} merge writes/new {W[0]/(N//2):5.2f} max {maxt:2d} avg {avg:4.1f}")
print("---- caps")
for L in (60_000, 16_000):
    for k,cap in ((4,4),(4,5),(4,6),(4,7),(3,5),(3,6)):
        pol,W=mk_abs(k,cap); tiers,maxt,avg=run(pol,N,L)
        print(f"L {L:6d} k{k} cap{cap:2d} merge writes/new {W[0]/(N//2):5.2f} max {maxt:2d} avg {avg:4.1f}")
