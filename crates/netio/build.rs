// OWNER: rules/XDP helper: compiles bpf/match.bpf.c with clang -target bpf.
fn main() {}
