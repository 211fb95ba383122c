#!/usr/bin/env bash
# Issue 38, 2026-12-04 (tenth session), call 6: the depthwise convolutions' split at 4 threads
# (cores 4-7). One CLI (494ea29 + exp.patch: HD_DW="h:rows,cols;..." forces the split of the
# depthwise convolutions whose output is h rows high; outputs unchanged), variants rotated:
#   A  main's plan_split (14x14: 14 rows by 2 channel halves; 7x7: 7 rows by 4 channel quarters)
#   B  whole rows only at 14x14 and 7x7 (each part all channels)
#   C  whole rows only at 14x14
#   D  whole rows only at 7x7
# `heimdall bench --per-op --runs 100`, eight rounds, then the whole model twelve rounds.
set -u
H=/tmp/h; mkdir -p $H $OUT/cpu
xz -dc .device/d17/heimdall-dwexp.xz > $H/dw; chmod +x $H/dw
{ nproc; lscpu | grep -E "Model name|L2|L3"; uptime; sha256sum $H/dw; } > $OUT/cpu/env.txt 2>&1
MODEL=assets/models/hand_landmark_lite.tflite
names=(A B C D); vals=("" "14:14,1;7:7,1" "14:14,1" "7:7,1")
for i in $(seq 0 7); do for k in 0 1 2 3; do j=$(( (i + k) % 4 ))
  HD_DW="${vals[$j]}" timeout 30 taskset -c 4-7 $H/dw bench $MODEL --threads 4 --runs 100 --per-op > $OUT/cpu/perop-${names[$j]}-$i.txt 2>/dev/null
done; done
echo "perop at ${SECONDS}s"
for i in $(seq 0 11); do for k in 0 1 2 3; do j=$(( (i + k) % 4 ))
  m=$(HD_DW="${vals[$j]}" timeout 30 taskset -c 4-7 $H/dw bench $MODEL --threads 4 --runs 100 2>/dev/null | grep -o 'median [0-9.]*' | cut -d' ' -f2)
  echo "whole 4 $i ${names[$j]} $m"
done; done > $OUT/cpu/whole.txt
echo "done at ${SECONDS}s"
for v in A B C D; do for i in $(seq 0 7); do awk -v v=$v '$2=="DEPTHWISE_CONV_2D" && $1>=17 {if ($1<35) d14+=$3; else d7+=$3} /median/{m=$9} END{printf "%s dw14 %.4f dw7 %.4f all %s\n", v, d14, d7, m}' $OUT/cpu/perop-$v-$i.txt; done; done
cat $OUT/cpu/whole.txt | awk '{a[$4]=a[$4]" "$5} END{for (k in a) print k, a[k]}'
tar cJf $OUT/cpu.txz -C $OUT cpu && rm -rf $OUT/cpu
