#!/bin/sh
# Re-record the MPI traces of this directory with SimGrid SMPI (3.32):
# each src/NAME.c is built with smpicc, run with smpirun -trace-ti, and its
# per-rank time-independent trace files land in NAME/rank-K.txt.
# Computation is not timed (smpi/simulate-computation:no): the only
# compute actions are the programs' smpi_execute_flops, so the files are
# the same on every machine.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
seq 0 15 | sed 's/^/node-/' >"$tmp/hosts"
record() { # NAME NPROCS
    smpicc -O1 "$here/src/$1.c" -o "$tmp/$1"
    (cd "$tmp" && smpirun -np "$2" -platform "$here/platform.xml" -hostfile hosts \
        -trace-ti --cfg=tracing/filename:"$1.txt" --cfg=smpi/simulate-computation:no \
        "./$1" >/dev/null 2>&1)
    rm -rf "${here:?}/$1"
    mkdir "$here/$1"
    # smpirun names rank K's file ..._rank-(K+1).txt, in the index $1.txt
    k=0
    while read -r f; do
        cp "$tmp/$f" "$here/$1/rank-$k.txt"
        k=$((k + 1))
    done <"$tmp/$1.txt"
}
record ring 4
record halo 4
record allreduce 4
record alltoall 4
record datatypes 2
