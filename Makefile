# Convenience targets; the README's two commands are scripts/main.sh and
# scripts/test.sh.
.PHONY: main test setup bench-hpu bench-sim bench-live bench-slmp validation benchmarks fuzz
main:
	scripts/main.sh
test:
	scripts/test.sh
setup:
	scripts/setup.sh
# EMBENCH=<embench-iot tree> adds its programs; LIBRISCV=<rvlinux> adds libriscv.
bench-hpu: setup
	python3 bench/hpu_bench.py $(if $(EMBENCH),--embench $(EMBENCH)) $(if $(LIBRISCV),--libriscv $(LIBRISCV)) $(if $(JIT),--jit)
bench-sim: setup
	python3 bench/sim_bench.py $(if $(JIT),--jit)
# The live NIC on a veth pair against the kernel (root; docs/live.md),
# then the SLMP file transfer (bench-slmp alone runs only the latter).
bench-live: setup
	.venv/bin/python bench/live_bench.py
	.venv/bin/python bench/slmp_bench.py
# SLMP file transfer against kernel TCP on a veth pair (root; docs/live.md).
bench-slmp: setup
	.venv/bin/python bench/slmp_bench.py
validation: setup
	python3 scripts/validation.py
benchmarks: setup
	.venv/bin/python scripts/benchmarks.py
# Every fuzz target for 5 minutes (scripts/fuzz.sh --smoke is CI's short run).
fuzz:
	scripts/fuzz.sh 300
