import torch,triton,triton.language as tl
import os;D=os.environ.get("D","cuda")
if D=="cpu":
 from suite.checks import interpreter;interpreter.install()
@triton.jit
def k(x,y,z,c,o,n,B:tl.constexpr):
 i=tl.program_id(0)*B+tl.arange(0,B);m=i<n
 a=tl.load(x+i,m);b=tl.load(y+i,m);d=tl.load(z+i,m);f=tl.load(c+i,m)
 tl.store(o+i,a+b,m);tl.store(o+n+i,a*b,m);tl.store(o+2*n+i,a-b,m);tl.store(o+3*n+i,tl.fma(a,b,d),m)
 tl.store(o+4*n+i,f.to(tl.bfloat16),m);tl.store(o+5*n+i,f.to(tl.bfloat16,fp_downcast_rounding="rtz"),m)
 tl.store(o+6*n+i,f.to(tl.float64).to(tl.bfloat16),m)
@triton.jit
def s(x,o,B:tl.constexpr):
 r=tl.program_id(0);i=tl.arange(0,B);tl.store(o+r,tl.sum(tl.load(x+r*B+i),0))
@triton.jit
def d(a,b,c,M:tl.constexpr):
 i=tl.arange(0,M);p=i[:,None]*M+i[None,:];tl.store(c+p,tl.dot(tl.load(a+p),tl.load(b+p)))
g=torch.Generator().manual_seed(0);n=1<<20
R=lambda:torch.randint(-2**15,2**15,(n,),generator=g,dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
x,y,z=R(),R(),R();c=torch.randint(-2**31,2**31,(n,),generator=g,dtype=torch.int64).to(torch.int32).view(torch.float32)
o=torch.empty(7*n,dtype=torch.bfloat16,device=D)
k[(n//1024,)](x.to(D),y.to(D),z.to(D),c.to(D),o,n,B=1024);o=o.cpu().view(7,n)
W=lambda t:t.float()
ref=[x+y,x*y,x-y,(W(x)*W(y)+W(z)).bfloat16(),c.bfloat16(),(c.view(torch.int32)>>16).to(torch.int16).view(torch.bfloat16),c.bfloat16()]
for name,gv,rv in zip("add mul sub fma cvt rtz f64cvt".split(),o,ref):
 nan=rv.isnan()
 if name=="rtz":nan=c.isnan()
 bad=(gv.view(torch.int16)!=rv.view(torch.int16))&~nan
 print(name,"mismatch",int(bad.sum()),"nan-ness differs",int((gv.isnan()!=nan).sum()),"nan bits",sorted(set(gv[gv.isnan()].view(torch.int16).tolist()))[:4])
 if bad.any():j=bad.nonzero()[0].item();print("  e.g.",x[j].item(),y[j].item(),z[j].item(),c[j].item(),gv[j].item(),rv[j].item())
for B in (32,128,1024):
 xs=(torch.randn(64*B,generator=g)).bfloat16();os_=torch.empty(64,dtype=torch.bfloat16,device=D);s[(64,)](xs.to(D),os_,B=B)
 t=xs.view(64,B)
 while t.shape[1]>1:h=t.shape[1]//2;t=(W(t[:,:h])+W(t[:,h:])).bfloat16()
 print("sum",B,"tree-equal",int((os_.cpu()==t[:,0]).sum()),"of 64; max diff",float((os_.cpu().float()-t[:,0].float()).abs().max()))
a=torch.randn(64,64,generator=g).bfloat16();b=torch.randn(64,64,generator=g).bfloat16();cc=torch.empty(64,64,device=D)
d[(1,)](a.to(D),b.to(D),cc,M=64);print("dot maxdiff vs fp32 matmul",float((cc.cpu()-W(a)@W(b)).abs().max()))
