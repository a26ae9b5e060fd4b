#!/bin/bash
cd /var/tmp/pts27
( while true; do echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done ) > fload.log &
LP=$!
date +%T > fstart.txt
/usr/bin/time -v /work/main/target/release/vsl pts --test all --target file:/var/tmp/pts-real:4G --round-time 500ms --max-rounds 10 \
  --time-factor 0.0016667 --hir-cycles 36 --dirth-threads 1,4,16 --dirth-qd 1,8,32 -y --out file > file.log 2> file.err
echo "rc=$?" >> file.err
date +%T > fend.txt
kill $LP
rm -f /var/tmp/pts-real
