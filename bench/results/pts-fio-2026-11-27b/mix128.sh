#!/bin/bash
# 65/35 and 50/50 128 KiB random on a laid-out 1 GiB file: the lab and fio
# alternating, 6 s each, 4 threads x QD 32, 2 MiB pages for both.
set -e
cd /work/main
f=/var/tmp/mix128.img
old=$(cat /proc/sys/vm/nr_hugepages); echo 512 > /proc/sys/vm/nr_hugepages
trap 'echo $old > /proc/sys/vm/nr_hugepages; rm -f $f /tmp/mixlab.json' EXIT
fallocate -l 1G $f
fio --name=wipc --filename=$f --size=1G --direct=1 --ioengine=io_uring --rw=write --bs=128k --iodepth=32 --loops=2 --output-format=json >/dev/null
for rep in 1 2 3 4 5 6; do
 for rd in 65 50 95; do
  if [ $((rep % 2)) = 0 ]; then tools="fio lab"; else tools="lab fio"; fi
  for tool in $tools; do
   if [ $tool = lab ]; then
     target/release/vsl run --target file:$f:1073741824 --rw randrw --rwmixread $rd --bs 131072 --threads 4 --qd 32 --duration 6000ms --interval 1000ms --layout skip --mem huge --json /tmp/mixlab.json -q 2>/dev/null
     v=$(python3 -c "import json,statistics;d=json.load(open('/tmp/mixlab.json'));print(round(statistics.mean(i['iops'] for i in d['intervals'][-5:])))")
   else
     v=$(fio --name=p --filename=$f --size=1073741824 --direct=1 --ioengine=io_uring --thread --group_reporting --norandommap --randrepeat=0 --rw=randrw --rwmixread=$rd --bs=131072 --numjobs=4 --iodepth=32 --time_based --runtime=5s --ramp_time=1s --mem=shmhuge --output-format=json | python3 -c "import json,sys;j=json.load(sys.stdin)['jobs'][0];print(round(j['read']['iops']+j['write']['iops']))")
   fi
   echo "rep $rep rd $rd $tool $v"
  done
 done
done
