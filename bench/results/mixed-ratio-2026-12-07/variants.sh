#!/usr/bin/env bash
# Writes the one-field variants of the shipped 640 MLC preset into DIR.
set -euo pipefail
dir=${1:?usage: variants.sh DIR}
P=presets/iodrive-duo-640-mlc.toml
mkdir -p "$dir"
v() { sed "$2" "$P" > "$dir/$1.toml"; }
cp "$P" "$dir/shipped.toml"
v reserve-0.10 's/^reserved_fraction = .*/reserved_fraction = 0.10/'
v read-charge-0 's/^gc_read_charge = .*/gc_read_charge = 0/'
v share-0.8 's/^gc_share = .*/gc_share = 0.8/'
v hold-0 's/^gc_move_read_hold = .*/gc_move_read_hold = 0/'
v buffer-64 's/^buffer_units = .*/buffer_units = 64/'
v pipe-1000 's/^read_pipe_depth = .*/read_pipe_depth = 1000/'
v pipe-1000-any-order 's/^read_pipe_depth = .*/read_pipe_depth = 1000/; s/^dispatch_in_order = .*/dispatch_in_order = false/'
v read-holds-die-off 's/^read_holds_die = .*/read_holds_die = false/'
v no-datapath 's/^gc_datapath = .*/gc_datapath = false/; s/^gc_datapath_split = .*/gc_datapath_split = false/'
v tprog-450 's/^program_ns = .*/program_ns = 450000/'
v tprog-tbers-200 's/^program_ns = .*/program_ns = 200000/; s/^erase_ns = .*/erase_ns = 200000/'
v tr-10 's/^read_ns = 50000/read_ns = 10000/'
v bus-50 's/^bus_bytes_per_s = .*/bus_bytes_per_s = 50000000/'
v bus-60 's/^bus_bytes_per_s = .*/bus_bytes_per_s = 60000000/'
v bus-80 's/^bus_bytes_per_s = .*/bus_bytes_per_s = 80000000/'
