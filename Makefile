# Convenience targets; the README's two commands are scripts/main.sh and
# scripts/test.sh.
.PHONY: main test setup bench-hpu
main:
	scripts/main.sh
test:
	scripts/test.sh
setup:
	scripts/setup.sh
bench-hpu: setup
	python3 bench/hpu_bench.py
