# Convenience targets; the README's two commands are scripts/main.sh and
# scripts/test.sh.
.PHONY: main test setup test-deps third-party check-paths bench-hpu bench-sim bench-live bench-slmp bench-cluster bench-usecases bench-scale validation benchmarks fuzz
main:
	scripts/main.sh
test:
	scripts/test.sh
# What the main job needs (setup), and what tests, benchmarks and the
# Python host API add (test-deps).
setup:
	scripts/setup.sh
test-deps:
	scripts/setup.sh --tests
# PsPIN's, FPsPIN's and Embench-IoT's sources at pinned commits into
# third_party/ (or from SOFTSPIN_{PSPIN,FPSPIN,EMBENCH}_REPO).
third-party:
	scripts/third-party.sh
check-paths:
	python3 scripts/check-paths.py
# EMBENCH=<embench-iot tree> adds its programs (default: third_party/embench
# when make third-party has filled it); LIBRISCV=<rvlinux> adds libriscv.
EMBENCH ?= $(if $(wildcard third_party/embench/src),third_party/embench)
bench-hpu: test-deps
	python3 bench/hpu_bench.py $(if $(EMBENCH),--embench $(EMBENCH)) $(if $(LIBRISCV),--libriscv $(LIBRISCV)) $(if $(JIT),--jit)
bench-sim: test-deps
	python3 bench/sim_bench.py $(if $(JIT),--jit)
# The live NIC on a veth pair against the kernel (root; docs/live.md),
# then the SLMP file transfer (bench-slmp alone runs only the latter).
bench-live: test-deps
	.venv/bin/python bench/live_bench.py
	.venv/bin/python bench/slmp_bench.py
# SLMP file transfer against kernel TCP on a veth pair (root; docs/live.md).
bench-slmp: test-deps
	.venv/bin/python bench/slmp_bench.py
# Remote memory on a 2-node cluster: the host-CPU server and kernel TCP
# (and the NIC-served series once `softspin rma lat|bw` exist) (root;
# docs/cluster.md "Benchmarks").
bench-cluster: test-deps
	.venv/bin/python bench/cluster_bench.py
# sPIN's use cases between hosts (examples/cluster/*/run), offload against
# the host CPU, medians of interleaved rounds (root; docs/usecases.md
# "Benchmarks"). ARGS: e.g. --quick, --only pingpong, --rounds 5.
bench-usecases: test-deps
	.venv/bin/python bench/usecases_bench.py $(ARGS)
# Seed 004's Fig. 5a on softspin netsim: broadcast of 8 B and 64 KiB on
# 2..1,024 nodes, four modes, both NICs, and the paper's checks
# (docs/scale.md "Results"; a few minutes). ARGS: e.g. --nodes 2,4,8.
bench-scale: test-deps
	cargo build --release -p softspin-cli
	.venv/bin/python bench/scale_bench.py $(ARGS)
validation: test-deps
	python3 scripts/validation.py
benchmarks: test-deps
	.venv/bin/python scripts/benchmarks.py
# Every fuzz target for 5 minutes (scripts/fuzz.sh --smoke is CI's short run).
fuzz:
	scripts/fuzz.sh 300
