import sys, numpy as np
d=np.loadtxt(sys.argv[1],dtype=np.int64)
m,s,t=d[:,0],d[:,1],d[:,2]
lat=(t-s)/1e6
print("all: mean %.3f sd %.3f cv %.3f"%(lat.mean(),lat.std(),lat.std()/lat.mean()))
for k in (0,1):
    l=lat[m==k]; print("member",k,"n",len(l),"mean %.3f sd %.3f cv %.3f"%(l.mean(),l.std(),l.std()/l.mean()))
# occupancy at sample times
t0=s.min()+int(0.5e9); t1=s.max()-int(0.2e9)
ts=np.arange(t0,t1,int(1e6))
occ=[]
for k in (0,1):
    ss=np.sort(s[m==k]); tt=np.sort(t[m==k])
    occ.append(np.searchsorted(ss,ts,side='right')-np.searchsorted(tt,ts,side='right'))
occ=np.array(occ)
n0=occ[0]; tot=occ[0]+occ[1]
print("total outstanding mean %.1f min %d max %d"%(tot.mean(),tot.min(),tot.max()))
fr=n0/tot
print("member0 share of outstanding: mean %.3f sd %.3f (uniform sd %.3f)"%(fr.mean(),fr.std(),1/np.sqrt(12)))
h,_=np.histogram(fr,bins=10,range=(0,1)); print("hist",h)
# per-member completion rate per bin
for B in (10e6,100e6,1000e6):
    bins=np.arange(t0,t1,int(B))
    r=[np.histogram(t[m==k],bins=bins)[0]/(B/1e9) for k in (0,1)]
    ratio=r[0]/(r[0]+r[1])
    print("bin %4dms: rate0 mean %.0f cv %.3f, rate1 cv %.3f, share0 sd %.3f"%(B/1e6,r[0].mean(),r[0].std()/r[0].mean(),r[1].std()/r[1].mean(),ratio.std()))
# autocorrelation of share
x=fr-fr.mean()
for lag in (1,5,10,50,100,300,1000):
    print("acf lag %dms %.3f"%(lag,(x[:-lag]*x[lag:]).mean()/x.var()))
