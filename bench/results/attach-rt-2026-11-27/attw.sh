#!/bin/bash
# attached 160 SLC scale 0.1: raw fio 16k randwrite, 4 jobs QD1 over 8 GiB, after a whole-card fill and 120 s warm-up
cd /work/main
w=$(mktemp -d /var/tmp/attw.XXXX)
export OPENVSL_RUN_DIR=$w/run OPENVSL_STATE_DIR=$w/state
dev=$(target/release/vsl attach --store $w/store --device iodrive-160-slc --scale 0.1 ${ATT:-} | cut -f1)
echo dev $dev
fio --name=pre --filename=$dev --rw=write --bs=1m --direct=1 --ioengine=libaio --iodepth=32 --output-format=terse >/dev/null
echo filled $(date -u +%T)
fio --name=warm --filename=$dev --size=8g --rw=randwrite --bs=16k --direct=1 --ioengine=psync --numjobs=4 --thread --group_reporting --time_based --runtime=120 --norandommap --randrepeat=0 --output-format=json > $w/warm.json
python3 -c "import json;j=json.load(open('$w/warm.json'))['jobs'][0]['write'];print('warm MiB/s',j['bw']/1024, 'lat us', j['lat_ns']['mean']/1e3)"
target/release/vsl-blockdev status --json > $w/st0.json
fio --name=m --filename=$dev --size=8g --rw=randwrite --bs=16k --direct=1 --ioengine=psync --numjobs=4 --thread --group_reporting --time_based --runtime=15 --norandommap --randrepeat=0 --output-format=json > $w/m.json
python3 -c "import json;j=json.load(open('$w/m.json'))['jobs'][0]['write'];print('measure MiB/s',j['bw']/1024, 'lat us', j['lat_ns']['mean']/1e3)"
target/release/vsl-blockdev status --json > $w/st1.json
python3 - $w <<'PY'
import json,sys
w=sys.argv[1]
a=json.load(open(w+'/st0.json'))[0]['members'][0]; b=json.load(open(w+'/st1.json'))[0]['members'][0]
print({k:b[k] for k in b if not isinstance(b[k],(dict,list))})
sp=b.get('wall_split',{}).get('write',{}); print('split write', {k:sp.get(k) for k in ('count','model_us','lead_us','late_us','wall_us')})
PY
target/release/vsl detach --all
rm -rf $w
