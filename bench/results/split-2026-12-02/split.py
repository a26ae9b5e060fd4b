# Closed loop: N I/Os over two FIFO servers, random routing; sojourn CV.
import random, heapq, statistics as st, math, sys
def sim(N=256, mu=1.0, cv_s=1.0, wander=0.0, period=200.0, n=400000, seed=1):
    r = random.Random(seed)
    def svc(t, q):
        m = 1/mu
        if wander:  # server rate wanders: sinusoid with random phase per server
            m /= (1 + wander*math.sin(2*math.pi*t/period + q*2.1))
        if cv_s == 0: return m
        k = 1/cv_s**2  # gamma with this CV
        return r.gammavariate(k, m/k)
    # each server: FIFO; track queue of arrival times; next completion
    qs = [[], []]; busy_until=[0.0,0.0]
    ev = []  # (completion time, server)
    t = 0.0
    for i in range(N):
        s = r.randrange(2); qs[s].append(0.0)
    for s in range(2):
        if qs[s]: heapq.heappush(ev, (svc(0,s), s))
    lat = []
    done = 0
    while done < n:
        t, s = heapq.heappop(ev)
        a = qs[s].pop(0); lat.append(t - a); done += 1
        if qs[s]: heapq.heappush(ev, (t + svc(t,s), s))
        d = r.randrange(2); qs[d].append(t)
        if len(qs[d]) == 1: heapq.heappush(ev, (t + svc(t,d), d))
    lat = lat[n//5:]
    m = st.mean(lat); return m, st.pstdev(lat)/m
for cv in (1.0, 0.3, 0.0):
    print('service cv', cv, 'latency mean %.1f CV %.3f' % sim(cv_s=cv))
for w in (0.05, 0.1, 0.2):
    print('wander', w, 'latency mean %.1f CV %.3f' % sim(cv_s=0.3, wander=w))
