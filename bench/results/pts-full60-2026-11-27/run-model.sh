#!/bin/bash
cd /var/tmp/pts27
( while true; do echo "$(date +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 30; done ) > load.log &
LP=$!
date +%T > start.txt
/usr/bin/time -v /work/main/target/release/vsl pts --test all --target iodrive-duo-640-mlc:stock \
  --target iodrive-duo-640-mlc:hp --scale 1 --round-time 60s --out model60 > model.log 2> model.err
echo "rc=$?" >> model.err
date +%T > end.txt
kill $LP
