import json,statistics as st,sys; d=json.load(open(sys.argv[1])); iv=d['intervals']; s=d['summary']
m=[i['lat_avg_us'] for i in iv]; w=[i['lat_stddev_us'] for i in iv]; io=[i['iops'] for i in iv]
print('%s IOPS %.0f mean %.0f sd %.0f CV %.2f | interval means sd %.0f, within sd %.0f, iops cv %.3f'%(sys.argv[1],s['iops'],s['lat_avg_us'],s['lat_stddev_us'],s['lat_stddev_us']/s['lat_avg_us'],st.pstdev(m),st.mean(w),st.pstdev(io)/st.mean(io)))
