"""Which order XLA:CPU (jax 0.10.2) uses, probed against float32 emulations in numpy: the evidence
for docs/jax.md's table of differing classes. Prints one line per probe (share of elements
bit-identical to XLA's, per emulated order).
  build/jax-venv/bin/python bench/jax/orders.py
FMA is emulated as the float64 product plus the addend rounded once to float32 (exact for the
product; the double rounding it can add is rare enough not to move these shares)."""
import programs as pg  # noqa: F401  (XLA_FLAGS first)
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
from meshrun_export.compare import bit_identical  # noqa: E402


def same(a, b):
    """Percent of elements bit-identical (meshrun_export.compare's definition)."""
    return np.mean(bit_identical(a, b)) * 100


print("---- dots: share bit-identical per emulated order")
f=jax.jit(lambda a,b: a@b)
def fma(a,b,c): return (a.astype(np.float64)*b+c).astype(np.float32)
def seq_fma(A,B):
    acc=np.zeros((A.shape[0],B.shape[1]),np.float32)
    for k in range(A.shape[1]): acc=fma(A[:,k:k+1],B[k:k+1,:],acc)
    return acc
def seq_add(A,B):
    acc=np.zeros((A.shape[0],B.shape[1]),np.float32)
    for k in range(A.shape[1]): acc=(acc+(A[:,k:k+1]*B[k:k+1,:]).astype(np.float32)).astype(np.float32)
    return acc
def split_fma(A,B,L):
    K=A.shape[1]; accs=[np.zeros((A.shape[0],B.shape[1]),np.float32) for _ in range(L)]
    for k in range(K): accs[k%L]=fma(A[:,k:k+1],B[k:k+1,:],accs[k%L])
    # pairwise combine
    while len(accs)>1:
        accs=[(accs[i]+accs[i+1]).astype(np.float32) if i+1<len(accs) else accs[i] for i in range(0,len(accs),2)]
    return accs[0]
def blocked_fma(A,B,kb):
    K=A.shape[1]; tot=None
    for k0 in range(0,K,kb):
        p=seq_fma(A[:,k0:k0+kb],B[k0:k0+kb,:]); tot=p if tot is None else (tot+p).astype(np.float32)
    return tot
rng=np.random.default_rng(1)
for (M,K,N) in [(4,2,8),(4,3,8),(4,5,8),(4,8,8),(4,16,8),(4,17,8),(4,32,8),(4,64,8),(16,128,16),(1,64,1),(8,32,64),(64,16,4)]:
    A=rng.standard_normal((M,K)).astype(np.float32); B=rng.standard_normal((K,N)).astype(np.float32)
    J=np.asarray(f(A,B))
    res={"seq_fma":seq_fma(A,B),"seq_add":seq_add(A,B)}
    for L in (2,4,8,16): res[f"split{L}"]=split_fma(A,B,L)
    for kb in (4,8,16,32): res[f"blk{kb}"]=blocked_fma(A,B,kb)
    print((M,K,N), " ".join(f"{k}={same(v,J):.0f}" for k,v in res.items()))
print("---- N threshold, K=32 M=4")
def comb(accs):
    while len(accs)>1:
        accs=[(accs[i]+accs[i+1]).astype(np.float32) if i+1<len(accs) else accs[i] for i in range(0,len(accs),2)]
    return accs[0]
def split4_tail(A,B,mode):
    K=A.shape[1]; K4=K//4*4; accs=[np.zeros((A.shape[0],B.shape[1]),np.float32) for _ in range(4)]
    for k in range(K4): accs[k%4]=fma(A[:,k:k+1],B[k:k+1,:],accs[k%4])
    if mode=="fma_after":
        r=comb(accs)
        for k in range(K4,K): r=fma(A[:,k:k+1],B[k:k+1,:],r)
        return r
    if mode=="fma_before":
        r=np.zeros_like(accs[0])
        for k in range(K4,K): accs[0]=fma(A[:,k:k+1],B[k:k+1,:],accs[0])
        return comb(accs)
    if mode=="sep_add":
        t=seq_fma(A[:,K4:],B[K4:,:]) if K>K4 else 0
        return (comb(accs)+t).astype(np.float32)
    if mode=="zero_pad":
        return split_fma(np.pad(A,((0,0),(0,(-K)%4))),np.pad(B,((0,(-K)%4),(0,0))),4)
for N in (1,2,3,4,8,9,12,16,17,24,32,33,48,64):
    A=rng.standard_normal((4,32)).astype(np.float32); B=rng.standard_normal((32,N)).astype(np.float32)
    J=np.asarray(f(A,B)); print(N, "seq_fma=%.0f split4=%.0f"%(same(seq_fma(A,B),J), same(split_fma(A,B,4),J)))
print("---- tails, N=8 M=4")
for K in (5,6,7,9,10,11,13,19,33):
    A=rng.standard_normal((4,K)).astype(np.float32); B=rng.standard_normal((K,8)).astype(np.float32)
    J=np.asarray(f(A,B)); print(K, " ".join(f"{m}=%.0f"%(same(split4_tail(A,B,m),J)) for m in ("fma_after","fma_before","sep_add","zero_pad")))
print("---- collectives, reductions, fusion")

rng=np.random.default_rng(3)
f32=np.float32
# 1. all-reduce order
mesh=pg.mesh_of((8,),("d",))
ps=jax.jit(jax.shard_map(lambda x: jax.lax.psum(x,"d"), mesh=mesh, in_specs=P("d"), out_specs=P()))
X=rng.standard_normal((8,1000)).astype(f32)
J=np.asarray(ps(X.reshape(8*1,1000)))  # each device gets (1,1000)
seq=X[0].copy()
for i in range(1,8): seq=(seq+X[i]).astype(f32)
tree=((X[0]+X[1])+(X[2]+X[3]))+((X[4]+X[5])+(X[6]+X[7]))
print("allreduce: seq rank order %.1f%%, pairwise tree %.1f%%"%(same(J[0],seq),same(J[0],tree)))
# 2. reduce_sum axis 0 and full
for n in (3,8,16,64,256,1000):
    A=rng.standard_normal((n,4)).astype(f32)
    J=np.asarray(jax.jit(lambda a: jnp.sum(a,axis=0))(A))
    s=np.zeros(4,f32)
    for i in range(n): s=(s+A[i]).astype(f32)
    pw=np.sum(A,axis=0,dtype=f32)  # numpy pairwise
    print("reduce_sum axis0 n=%d: sequential %.0f%% numpy-pairwise %.0f%%"%(n,same(J,s),same(J,pw)))
for n in (8,64,256,1000,4096):
    A=rng.standard_normal(n).astype(f32)
    J=np.asarray(jax.jit(jnp.sum)(A))
    s=f32(0)
    for v in A: s=f32(s+v)
    # 8-lane vector sum then horizontal
    def lanes(L):
        acc=np.zeros(L,f32)
        for i in range(0,n-n%L,L): acc=(acc+A[i:i+L]).astype(f32)
        t=acc
        while len(t)>1: t=(t[:len(t)//2]+t[len(t)//2:]).astype(f32)
        r=t[0]
        for v in A[n-n%L:]: r=f32(r+v)
        return r
    print("reduce_sum full n=%d: seq %s lanes8 %s lanes16 %s lanes4 %s"%(n, J==s, J==lanes(8), J==lanes(16), J==lanes(4)))
# 3. fma contraction of w - lr*g
w=rng.standard_normal(10000).astype(f32); g=rng.standard_normal(10000).astype(f32); lr=f32(0.1)
J=np.asarray(jax.jit(lambda w,lr,g: w-lr*g)(w,lr,g))
plain=(w-(lr*g).astype(f32)).astype(f32)
fused=(w.astype(np.float64)-np.float64(lr)*g).astype(f32)
print("w - lr*g: plain %.1f%% fused %.1f%%"%(same(J,plain),same(J,fused)))
# err*err summed: fused?
# 4. division by constant
x=rng.standard_normal(10000).astype(f32)
for c in (3.0,8.0,24.0):
    J=np.asarray(jax.jit(lambda x: x/c)(x))
    print("x/%g: div %.1f%% mul-by-reciprocal %.1f%%"%(c, same(J,x/f32(c)), same(J,x*(f32(1)/f32(c)))))
print("---- the loss: sum of squares, and the reduction over rows")
rng=np.random.default_rng(5); f32=np.float32
def fma(a,b,c): return f32(np.float64(a)*np.float64(b)+np.float64(c))
# loss: jnp.mean(jnp.sum(e**2, axis=1)) on (n,k)
for n,k in ((3,2),(4,3),(16,3),(64,4),(12,6)):
  hits={"rowsum_then_seq":0,"one_chain":0,"rowsum_fma":0,"one_chain_fma":0}
  for t in range(200):
    e=rng.standard_normal((n,k)).astype(f32)
    J=np.asarray(jax.jit(lambda e: jnp.sum(jnp.sum(e**2,axis=1)))(e))
    r=[f32(0)]*n
    rs=[]; 
    for i in range(n):
        s=f32(0)
        for j in range(k): s=f32(s+f32(e[i,j]*e[i,j]))
        rs.append(s)
    a=f32(0)
    for s in rs: a=f32(a+s)
    hits["rowsum_then_seq"]+=J==a
    c=f32(0)
    for v in e.ravel(): c=f32(c+f32(v*v))
    hits["one_chain"]+=J==c
    rs=[]
    for i in range(n):
        s=f32(0)
        for j in range(k): s=fma(e[i,j],e[i,j],s)
        rs.append(s)
    a=f32(0)
    for s in rs: a=f32(a+s)
    hits["rowsum_fma"]+=J==a
    c=f32(0)
    for v in e.ravel(): c=fma(v,v,c)
    hits["one_chain_fma"]+=J==c
  print((n,k),{h:v/2 for h,v in hits.items()})
# row reduce n=64 (n,4) axis 0: interleaved accumulators?
for n in (32,64,128):
  A=rng.standard_normal((n,4)).astype(f32)
  J=np.asarray(jax.jit(lambda a: jnp.sum(a,axis=0))(A))
  for L in (2,4,8,16,32):
    acc=np.zeros((L,4),f32)
    for i in range(n): acc[i%L]=(acc[i%L]+A[i]).astype(f32)
    seq=acc[0].copy()
    for i in range(1,L): seq=(seq+acc[i]).astype(f32)
    t=acc
    while len(t)>1: t=(t[:len(t)//2]+t[len(t)//2:]).astype(f32)
    tr=t[0]
    print(n,L,"interleaved+seq",np.mean(seq==J)*100,"interleaved+halving",np.mean(tr==J)*100)
print("---- the tail of k (K mod 4 leftover), N=8 M=8: variants")
def comb(accs):  # noqa: F811
    while len(accs)>1:
        accs=[(accs[i]+accs[i+1]).astype(f32) if i+1<len(accs) else accs[i] for i in range(0,len(accs),2)]
    return accs[0]
def main4(A,B,K4):
    accs=[np.zeros((A.shape[0],B.shape[1]),f32) for _ in range(4)]
    for k in range(K4): accs[k%4]=fma(A[:,k:k+1],B[k:k+1,:],accs[k%4])
    return accs
rng=np.random.default_rng(7)
def variants(A,B):
    K=A.shape[1]; K4=K//4*4; accs=main4(A,B,K4); r=comb(accs); out={}
    prods=[(A[:,k:k+1]*B[k:k+1,:]).astype(f32) for k in range(K4,K)]
    # v1: tail chain fma then add
    t=np.zeros_like(r)
    for k in range(K4,K): t=fma(A[:,k:k+1],B[k:k+1,:],t)
    out["tailchain_add"]=(r+t).astype(f32)
    # v2: tail pairwise of rounded products then add
    out["tailpair_add"]=(r+comb(list(prods))).astype(f32) if prods else r
    # v3: tail as 2-split: tail accs then pairwise
    ta=[np.zeros_like(r) for _ in range(len(prods))]
    # v4: tail fma onto r sequentially
    t=r.copy()
    for k in range(K4,K): t=fma(A[:,k:k+1],B[k:k+1,:],t)
    out["fma_onto"]=t
    # v5: split into blocks: first K4 as 4 chains, tail r>=2 as 2 chains (k%2) combined, added
    if K-K4>=2:
        c=[np.zeros_like(r),np.zeros_like(r)]
        for i,k in enumerate(range(K4,K)): c[i%2]=fma(A[:,k:k+1],B[k:k+1,:],c[i%2])
        out["tail2chains_add"]=(r+(c[0]+c[1]).astype(f32)).astype(f32)
    # v6: a0..a3 with tail continuing in accs[0..r-1] but combine (c0+c1)+(c2+c3)
    accs2=[a.copy() for a in accs]
    for i,k in enumerate(range(K4,K)): accs2[i]=fma(A[:,k:k+1],B[k:k+1,:],accs2[i])
    out["tail_into_first"]=comb(accs2)
    # v7: 2-chain main for remainder: K8? treat K as 4-chains for K4, then tail handled by a 2-wide kernel: pairs (k,k+1) fma'd into 2 accs, leftover into sep
    return out
for K in (6,7,10,11,14,15,18,19):
    A=rng.standard_normal((8,K)).astype(f32); B=rng.standard_normal((K,8)).astype(f32)
    J=np.asarray(f(A,B)); print(K, " ".join(f"{k}={same(v,J):.0f}" for k,v in variants(A,B).items()))
