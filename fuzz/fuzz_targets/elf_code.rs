//! Arbitrary bytes as handler code: they replace the code of a well-formed
//! handler image (examples/empty), so coverage reaches the decoder, the
//! interpreter and the command unit, not the ELF parser.
//!
//! Input: `sel`, `n`, `n` ecall records, then raw code. `sel` picks the
//! handler kind and packet size. Each record is a service byte and five
//! arguments (a0..a4) of 5 bytes each; it becomes `li`/`lw` loads of
//! a7, a0..a4 and an `ecall`, so every service is reached with
//! guest-controlled lengths and addresses that random code bytes would
//! almost never form (a 4 GiB cluster DMA of the packet went unfound).
//! The raw code runs after the records, then the handler returns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use softspin_engine::EctxSpec;
use softspin_fuzz::{handler, packet, run_engine, small_config};
use softspin_hpu::abi::{self, sys, HandlerArgs, TaskLayout};
use softspin_hpu::Perm;

/// Every service of the guest ABI; a service byte past the list is used as
/// a7 itself (unknown services).
const SERVICES: [u32; 14] = [
    sys::WRITE,
    sys::EXIT,
    sys::DMA,
    sys::SEND_PACKET,
    sys::RDMA_PUT,
    sys::DMA_TO_HOST,
    sys::DMA_FROM_HOST,
    sys::WRITE_TO_HOST,
    sys::CMD_WAIT,
    sys::CMD_TEST,
    sys::PUSH_COUNTER,
    sys::NOTIFY_POST,
    sys::NOTIFY_WAIT,
    sys::NOTIFY_TEST,
];

/// Argument registers a record sets (a0..a4: DMA_TO_HOST reads a4).
const ARGS: usize = 5;
/// Bytes of one argument: a kind and a 32-bit value.
const ARG_BYTES: usize = 5;
const RECORD_BYTES: usize = 1 + ARGS * ARG_BYTES;

// Registers the generated code uses besides a0..a7: t6 keeps the handler's
// `handler_args_t *` (a0 is overwritten by the first ecall's result), t5
// holds `task` and t4 a delta.
const T4: u32 = 29;
const T5: u32 = 30;
const T6: u32 = 31;

fn lui(rd: u32, imm20: u32) -> u32 {
    (imm20 << 12) | (rd << 7) | 0x37
}
fn addi(rd: u32, rs1: u32, imm: i32) -> u32 {
    ((imm as u32 & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x13
}
fn lw(rd: u32, rs1: u32, off: u32) -> u32 {
    ((off & 0xfff) << 20) | (rs1 << 15) | (2 << 12) | (rd << 7) | 0x03
}
fn add(rd: u32, rs1: u32, rs2: u32) -> u32 {
    (rs2 << 20) | (rs1 << 15) | (rd << 7) | 0x33
}
const ECALL: u32 = 0x0000_0073;
/// `jalr x0, 0(ra)`.
const RET: u32 = 0x0000_8067;

/// `rd = v` (lui + addi; addi's immediate is sign-extended, so round up).
fn li(out: &mut Vec<u32>, rd: u32, v: u32) {
    let hi = v.wrapping_add(0x800) >> 12;
    let lo = v.wrapping_sub(hi << 12) as i32;
    out.push(lui(rd, hi));
    out.push(addi(rd, rd, lo));
}

/// `rd = task->field` (read at run time: the packet, handler memory,
/// scratchpad and host window the NIC assigned).
fn task_field(out: &mut Vec<u32>, rd: u32, off: u32) {
    out.push(lw(T5, T6, HandlerArgs::TASK));
    out.push(lw(rd, T5, off));
}

/// `rd += delta`.
fn plus(out: &mut Vec<u32>, rd: u32, delta: i32) {
    if delta != 0 {
        li(out, T4, delta as u32);
        out.push(add(rd, rd, T4));
    }
}

/// One argument, biased towards the values that break length and address
/// checks: 0, all ones, the sign bit's edges, a task field (packet,
/// handler memory, scratchpad, host window...), the end of a task region,
/// or a memory-map bound, the last three plus a small delta.
fn arg(out: &mut Vec<u32>, rd: u32, kind: u8, v: u32, map: &abi::MemoryMap, task: &TaskLayout) {
    let delta = ((v >> 16) as i16) as i32;
    match kind % 8 {
        0 => li(out, rd, v),
        1 => li(out, rd, 0),
        2 => li(out, rd, u32::MAX),
        3 => li(out, rd, i32::MAX as u32),
        4 => li(out, rd, 1 << 31),
        5 => {
            let fields = task.fields();
            task_field(out, rd, fields[v as usize % fields.len()].1);
            plus(out, rd, delta);
        }
        6 => {
            // (start, size) pairs: one past the end of each region.
            let regions = [
                (TaskLayout::PKT_MEM, TaskLayout::PKT_MEM_SIZE),
                (TaskLayout::HANDLER_MEM, TaskLayout::HANDLER_MEM_SIZE),
                (TaskLayout::SCRATCHPAD, task.scratchpad_size()),
                (task.host_mem_low(), task.host_mem_size()),
            ];
            let (start, size) = regions[v as usize % regions.len()];
            task_field(out, rd, start);
            task_field(out, T4, size);
            out.push(add(rd, rd, T4));
            plus(out, rd, delta);
        }
        _ => {
            let bounds = [
                abi::L1_BASE,
                abi::L1_BASE + map.l1_size,
                abi::L2_HANDLER_BASE,
                abi::L2_HANDLER_BASE + map.l2_handler_size,
                abi::L2_PKT_BASE,
                abi::L2_PKT_BASE + map.l2_pkt_size,
                abi::PROG_MEM_BASE,
                abi::PROG_MEM_BASE + map.prog_mem_size,
                abi::HOST_WINDOW_BASE as u32,
                (abi::HOST_WINDOW_BASE >> 32) as u32,
            ];
            li(out, rd, bounds[v as usize % bounds.len()].wrapping_add(delta as u32));
        }
    }
}

/// The ecall records of `data` as code; returns the code and the bytes left.
fn records<'a>(data: &'a [u8], map: &abi::MemoryMap, task: &TaskLayout) -> (Vec<u32>, &'a [u8]) {
    let mut out = vec![addi(T6, abi::A0 as u32, 0)];
    let Some((&n, mut rest)) = data.split_first() else { return (out, data) };
    for _ in 0..n {
        let Some((rec, tail)) = rest.split_first_chunk::<RECORD_BYTES>() else { break };
        rest = tail;
        let s = rec[0] as usize;
        li(&mut out, abi::A7 as u32, SERVICES.get(s).copied().unwrap_or(s as u32));
        for (k, a) in rec[1..].chunks_exact(ARG_BYTES).enumerate() {
            let v = u32::from_le_bytes([a[1], a[2], a[3], a[4]]);
            arg(&mut out, (abi::A0 + k) as u32, a[0], v, map, task);
        }
        out.push(ECALL);
    }
    (out, rest)
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, data)) = data.split_first() else { return };
    let cfg = small_config();
    let (calls, raw) = records(data, &cfg.memory_map(), &TaskLayout::new(cfg.clusters));
    let mut code: Vec<u8> = calls.iter().flat_map(|i| i.to_le_bytes()).collect();
    code.extend_from_slice(raw);
    // Raw code that falls through returns (a half instruction left over
    // from compressed code still faults: that is a case too).
    code.extend_from_slice(&RET.to_le_bytes());
    let mut img = handler(0);
    let Some(text) = img.segments.iter_mut().find(|s| s.perm.has(Perm::X)) else { return };
    text.data = code;
    text.memsz = text.data.len() as u32;
    let entry = text.vaddr;
    img.symbols.insert("fuzz_handler".into(), entry);
    let mut spec = EctxSpec::new("fuzz", img);
    let h = Some("fuzz_handler".to_string());
    match sel % 3 {
        0 => spec.ph = h,
        1 => spec.hh = h,
        _ => spec.th = h,
    }
    let size = 64 + (sel as usize >> 2) * 16;
    // Two packets of one message: header, payload and completion handlers all run.
    run_engine(cfg, spec, vec![packet(size, 0, false), packet(size, 0, true)]);
});
